package reconcile

import (
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/netattach"
)

// NADs serves multus NetworkAttachmentDefinitions to the pod path. The type
// lives in package netattach because package controller builds and starts
// it (controller.Informers.NADs) and must not import reconcile, whose tests
// import controller.
type NADs = netattach.NADs

// ErrNADsNotServed: the API server does not serve NetworkAttachmentDefinitions
// (multus not installed). It is netattach.ErrNotServed, so errors.Is works
// with either name.
var ErrNADsNotServed = netattach.ErrNotServed

// ErrNADsNotSynced: whether the resource is served is not known yet, or its
// informer has not synced; a retry later can help.
var ErrNADsNotSynced = netattach.ErrNotSynced

// NewNADs returns NetworkAttachmentDefinitions served from a dynamic informer
// on k8s.cni.cncf.io/v1 that starts once disc reports the resource; see
// netattach.New. A replica gets one from controller.Informers.NADs and need
// not make its own.
func NewNADs(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration, logger klog.Logger) *NADs {
	return netattach.New(disc, dyn, resync, logger)
}
