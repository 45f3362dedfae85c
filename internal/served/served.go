// Package served waits, through discovery, for API resources that another
// project installs (multus's NetworkAttachmentDefinitions, KubeVirt's
// VirtualMachines): a replica starts without them, says so once, and asks
// again until they are served.
package served

import (
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// DefaultRecheckInterval is how often discovery is asked again while the
// resources are not served.
const DefaultRecheckInterval = time.Minute

// FirstRetry is the first delay after a failed discovery request; it
// doubles up to the recheck interval.
const FirstRetry = time.Second

// Wait asks discovery whether resources are served until they are.
type Wait struct {
	// What names the resources in log lines ("NetworkAttachmentDefinitions").
	What string
	// Missing says, once, what is not installed and what follows from it
	// ("multus is not installed; attachments will not be served").
	Missing string
	// Recheck is the interval between questions while they are not
	// served; zero means DefaultRecheckInterval.
	Recheck time.Duration
	Logger  klog.Logger
	// Served asks discovery (Resources, usually).
	Served func(ctx context.Context) (bool, error)
	// NotServed, if set, is called on every definite no.
	NotServed func()
}

// Run returns true once the resources are served, false when ctx ended
// first. A failed question is asked again after FirstRetry, doubling up
// to Recheck; a definite no after Recheck.
func (w Wait) Run(ctx context.Context) bool {
	recheck := w.Recheck
	if recheck <= 0 {
		recheck = DefaultRecheckInterval
	}
	retry := FirstRetry
	logged := false
	for {
		served, err := w.Served(ctx)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return false
			}
			wait, retry = retry, min(2*retry, recheck)
			w.Logger.Error(err, "Asking discovery whether "+w.What+" are served", "retryIn", wait)
		case served:
			if logged {
				w.Logger.Info(w.What + " are served now; watching them")
			}
			return true
		default:
			retry = FirstRetry
			if w.NotServed != nil {
				w.NotServed()
			}
			if !logged {
				w.Logger.Info(w.What+" are not served ("+w.Missing+")", "recheckEvery", recheck)
				logged = true
			}
			wait = recheck
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// Resources asks disc whether every resource of gvrs, all of one group
// version, is served. A 404 for the group version is a definite no; other
// errors are no answer.
func Resources(ctx context.Context, disc discovery.ServerResourcesInterfaceWithContext, gvrs ...schema.GroupVersionResource) (bool, error) {
	if len(gvrs) == 0 {
		return true, nil
	}
	list, err := disc.ServerResourcesForGroupVersionWithContext(ctx, gvrs[0].GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, gvr := range gvrs {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			return false, nil
		}
	}
	return true, nil
}
