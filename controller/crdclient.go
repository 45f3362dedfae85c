package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	kubeovnclient "github.com/shardnet/shardnet/api/client/clientset/versioned/typed/kubeovn/v1"
	shardnetclient "github.com/shardnet/shardnet/api/client/clientset/versioned/typed/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/jsoncodec"
)

// CRDClient is the clientset of the custom resources (AddressClaims,
// kube-ovn's IPs, Subnets, Vips...) as a replica uses it: the generated
// clientset's requests, decoded with jsoncodec's JSON serializer instead
// of client-go's (the API server serves custom resources as JSON only, and
// every replica decodes every claim and IP record event). The groups share
// one connection pool and one client-side rate limiter, as the generated
// clientset's do.
func CRDClient(rc *rest.Config) (versioned.Interface, error) {
	cfg := *rc
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("a client QPS of %v needs a burst above 0", cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	ns := jsoncodec.NegotiatedSerializer(scheme.Scheme, scheme.Codecs)
	group := func(gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := cfg
		c.GroupVersion = &gv
		c.APIPath = "/apis"
		c.NegotiatedSerializer = ns
		return rest.RESTClientForConfigAndClient(&c, httpClient)
	}
	cs := &crdClient{}
	kc, err := group(kubeovnv1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("the kubeovn.io client: %w", err)
	}
	sc, err := group(v1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("the shardnet.io client: %w", err)
	}
	cs.kubeovn, cs.shardnet = kubeovnclient.New(kc), shardnetclient.New(sc)
	if cs.DiscoveryClient, err = discovery.NewDiscoveryClientForConfigAndClient(&cfg, httpClient); err != nil {
		return nil, err
	}
	return cs, nil
}

type crdClient struct {
	*discovery.DiscoveryClient
	kubeovn  *kubeovnclient.KubeovnV1Client
	shardnet *shardnetclient.ShardnetV1alpha1Client
}

var _ versioned.Interface = &crdClient{}

func (c *crdClient) Discovery() discovery.DiscoveryInterfaces { return c.DiscoveryClient }
func (c *crdClient) KubeovnV1() kubeovnclient.KubeovnV1Interface {
	return c.kubeovn
}
func (c *crdClient) ShardnetV1alpha1() shardnetclient.ShardnetV1alpha1Interface {
	return c.shardnet
}
