package app

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/reconcile"
)

// externalGateway watches the one ConfigMap that names the external
// gateway of eip/snat pods (docs/contract.md G11), in
// --external-gateway-config-ns only and by name, so that the replica
// needs to read no other ConfigMap there (deploy/base/rbac.yaml). Pods
// waiting for it (E25) are retried when it is added or changed; the
// fallback Subnet's appearance retries them through watchWaitedFor. nil
// with --enable-eip-snat=false: nothing reads it then.
func (r *incarnation) externalGateway(inf *controller.Informers, catalog reconcile.Catalog) (reconcile.ExternalGatewayCatalog, error) {
	if r.opts.DisableEIPSNAT {
		return nil, nil
	}
	ns := r.opts.ExternalGatewayConfigNS
	if ns == "" {
		ns = reconcile.DefaultExternalGatewayNamespace
	}
	sw := r.opts.ExternalGatewaySwitch
	if sw == "" {
		sw = reconcile.DefaultExternalGatewaySwitch
	}
	informer := inf.Kube.InformerFor(&corev1.ConfigMap{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(c, ns, resync, cache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", reconcile.ExternalGatewayConfigMap).String()
		})
	})
	retry := func(any) {
		if n := r.ctrl.RetryDelayed(); n > 0 {
			klog.Background().V(2).Info("The external gateway ConfigMap changed: retrying the pods put off", "keys", n)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    retry,
		UpdateFunc: func(_, cur any) { retry(cur) },
	}); err != nil {
		return nil, err
	}
	return reconcile.ExternalGatewayConfig{
		ConfigMaps: corelisters.NewConfigMapLister(informer.GetIndexer()),
		Namespace:  ns, Subnets: catalog, Switch: sw,
	}, nil
}
