package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/queue"
)

// ReasonSecurityGroup is the Warning Event reason of a security group a
// pod names whose port group kube-ovn's SecurityGroup controller has not
// created (docs/contract.md E24).
const ReasonSecurityGroup = "SecurityGroupNotFound"

// ErrUnknownSecurityGroup is a security group without its port group.
var ErrUnknownSecurityGroup = errors.New("security group has no port group yet")

// parseSecurityGroups reads security_groups as kube-ovn does: white space
// anywhere is ignored, then the value is a comma list; empty entries and
// repeats are skipped.
func parseSecurityGroups(v string) []string {
	v = strings.Join(strings.Fields(v), "")
	var out []string
	for _, sg := range strings.Split(v, ",") {
		if sg != "" && !slices.Contains(out, sg) {
			out = append(out, sg)
		}
	}
	return out
}

// portExternalIDs are the keys a port's spec adds beside pod, ls and
// vendor (docs/contract.md N2): on a custom VPC, a port that does not
// name kube-ovn's default security group records that it is not in it,
// as kube-ovn marks such ports. The VIP and security group keys are
// written by the port builder, which sees the port's current keys.
func (pl *Planner) portExternalIDs(np *NetworkPlan) map[string]string {
	vpc := np.Subnet.Spec.Vpc
	if vpc == "" || vpc == pl.ClusterRouter || slices.Contains(np.Request.SecurityGroups, ovn.DefaultSecurityGroup) {
		return nil
	}
	return map[string]string{ovn.AssociatedSecurityGroupKey(ovn.DefaultSecurityGroup): "false"}
}

// securityGroupsMissing reports the security groups of a written port
// that have no port group yet: the port records them and joins the
// others, and the pod is retried with backoff until kube-ovn's
// SecurityGroup controller has created them (docs/contract.md E24).
func (t *Term) securityGroupsMissing(pod *corev1.Pod, np *NetworkPlan, w NetworkWrites) error {
	if w.Port == nil || len(w.Port.SecurityGroups) == 0 {
		return nil
	}
	var missing []string
	for _, sg := range w.Port.SecurityGroups {
		if _, ok := t.p.cfg.NB.PortGroup(ovn.SecurityGroupPortGroup(sg)); !ok {
			missing = append(missing, sg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	key := Key(np.Provider, KeySecurityGroups)
	err := fmt.Errorf("annotation %s=%q: %s (port group %s): %w", key, pod.Annotations[key], strings.Join(missing, ","),
		ovn.SecurityGroupPortGroup(missing[0]), ErrUnknownSecurityGroup)
	if np.Attachment != "" {
		err = fmt.Errorf("attachment %s: %w", np.Attachment, err)
	}
	t.warn(pod, ReasonSecurityGroup, err)
	// Cured by kube-ovn's SecurityGroup controller, which does not queue
	// the pod: the queue's backoff brings it back. The shard has nothing
	// more to do for it meanwhile.
	return queue.Waiting(err)
}
