package shard

import (
	"fmt"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Names of the annotations and labels on member Leases and the assignment
// ConfigMap. They are the wire format between replicas: change them only
// with a migration.
const (
	// MemberLabel marks member Leases; its value is Config.Name.
	MemberLabel = "shardnet.io/member-of"
	// HeldAnnotation lists the shards a member runs or still drains
	// (Set text form).
	HeldAnnotation = "shardnet.io/held"
	// SeenAnnotation is the assignment generation the member processed.
	SeenAnnotation = "shardnet.io/seen"
	// IncarnationAnnotation changes every time a member's process starts.
	IncarnationAnnotation = "shardnet.io/incarnation"
	// LeavingAnnotation is "true" while a member shuts down.
	LeavingAnnotation = "shardnet.io/leaving"
	// AssignmentKey is the ConfigMap data key holding the table.
	AssignmentKey = "assignment"
)

// report is what a member's Lease says about it.
type report struct {
	incarnation string
	held        Set
	seen        uint64
	leaving     bool
}

func (r report) equal(o report) bool {
	return r.incarnation == o.incarnation && r.seen == o.seen && r.leaving == o.leaving && r.held.Equal(o.held)
}

func (r report) annotate(l *coordinationv1.Lease) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[IncarnationAnnotation] = r.incarnation
	l.Annotations[HeldAnnotation] = r.held.String()
	l.Annotations[SeenAnnotation] = strconv.FormatUint(r.seen, 10)
	if r.leaving {
		l.Annotations[LeavingAnnotation] = "true"
	} else {
		delete(l.Annotations, LeavingAnnotation)
	}
}

// parseReport reads a member Lease. A Lease whose annotations do not parse
// is an error: the caller keeps what it knew before rather than trusting a
// held set it cannot read.
func parseReport(l *coordinationv1.Lease, shards int) (string, report, error) {
	var r report
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", r, fmt.Errorf("member lease %s has no holder identity", l.Name)
	}
	held, err := ParseSet(l.Annotations[HeldAnnotation], shards)
	if err != nil {
		return "", r, fmt.Errorf("member lease %s: %w", l.Name, err)
	}
	r.held = held
	if s := l.Annotations[SeenAnnotation]; s != "" {
		if r.seen, err = strconv.ParseUint(s, 10, 64); err != nil {
			return "", r, fmt.Errorf("member lease %s: bad %s %q", l.Name, SeenAnnotation, s)
		}
	}
	r.leaving = l.Annotations[LeavingAnnotation] == "true"
	r.incarnation = l.Annotations[IncarnationAnnotation]
	return *l.Spec.HolderIdentity, r, nil
}
