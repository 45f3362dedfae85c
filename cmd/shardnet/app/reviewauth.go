package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The metrics port's delegated authentication and authorisation: a
// TokenReview for the bearer token, a SubjectAccessReview for the request's
// path, each answer cached. Written here rather than taken from
// k8s.io/apiserver, whose delegating authenticator and authorizer link its
// CEL authorizer and the rest of a server's authentication into the binary
// for two API calls: 7.4 MB of code and read-only data, and 12 MiB of a
// replica's resident pages from its start (decision 0009).

// identity is the user a TokenReview vouched for.
type identity struct {
	name, uid string
	groups    []string
	extra     map[string]authzv1.ExtraValue
}

// requestAuthenticator finds who sent a request: ok false without a token
// the API server accepts, err when it could not answer.
type requestAuthenticator interface {
	authenticate(req *http.Request) (who *identity, ok bool, err error)
}

// requestAuthorizer decides whether who may use verb on the non-resource
// path; reason is the API server's, for the log.
type requestAuthorizer interface {
	authorize(ctx context.Context, who *identity, verb, path string) (allowed bool, reason string, err error)
}

// reviewCacheSize bounds each cache's entries; a full cache drops what
// has expired, and when nothing has, starts over.
const reviewCacheSize = 1024

// ttlCache keeps answers until their expiry.
type ttlCache[V any] struct {
	mu      sync.Mutex
	now     func() time.Time
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[V any](now func() time.Time) *ttlCache[V] {
	return &ttlCache[V]{now: now, entries: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(k string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= reviewCacheSize {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= reviewCacheSize {
			clear(c.entries)
		}
	}
	c.entries[k] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

// retryReview calls review until it succeeds, fails for good (a 4xx
// answer other than 429) or backoff runs out, within ctx.
func retryReview(ctx context.Context, backoff wait.Backoff, review func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = review(ctx)
		if last == nil {
			return true, nil
		}
		var status apierrors.APIStatus
		if errors.As(last, &status) {
			code := status.Status().Code
			if code >= 400 && code < 500 && code != http.StatusTooManyRequests {
				return false, last
			}
		}
		return false, nil
	})
	if err != nil && last != nil && !errors.Is(err, last) {
		return fmt.Errorf("%w (last: %w)", err, last)
	}
	return err
}

// tokenReviewer authenticates a request's bearer token with a TokenReview.
type tokenReviewer struct {
	review  func(context.Context, *authnv1.TokenReview) (*authnv1.TokenReview, error)
	timeout time.Duration
	backoff wait.Backoff
	ttl     time.Duration
	// cache is keyed by the token's SHA-256, so no token is kept.
	cache *ttlCache[*identity]
}

func (r *tokenReviewer) authenticate(req *http.Request) (*identity, bool, error) {
	token, ok := bearerToken(req)
	if !ok {
		return nil, false, nil
	}
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if who, ok := r.cache.get(key); ok {
		return who, who != nil, nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), r.timeout)
	defer cancel()
	var got *authnv1.TokenReview
	err := retryReview(ctx, r.backoff, func(ctx context.Context) error {
		var err error
		got, err = r.review(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	var who *identity
	if got.Status.Authenticated {
		u := got.Status.User
		who = &identity{name: u.Username, uid: u.UID, groups: u.Groups}
		if len(u.Extra) > 0 {
			who.extra = make(map[string]authzv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				who.extra[k] = authzv1.ExtraValue(v)
			}
		}
	}
	// A rejected token is remembered too, so a scraper with a bad one
	// does not cost a review per scrape.
	r.cache.put(key, who, r.ttl)
	if who == nil {
		if got.Status.Error != "" {
			return nil, false, errors.New(got.Status.Error)
		}
		return nil, false, nil
	}
	return who, true, nil
}

// bearerToken is the token of an "Authorization: Bearer" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// accessReviewer authorises a user's verb on a path with a
// SubjectAccessReview.
type accessReviewer struct {
	review            func(context.Context, *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error)
	backoff           wait.Backoff
	allowTTL, denyTTL time.Duration
	cache             *ttlCache[accessAnswer]
}

type accessAnswer struct {
	allowed bool
	reason  string
}

func (r *accessReviewer) authorize(ctx context.Context, who *identity, verb, path string) (bool, string, error) {
	key := accessKey(who, verb, path)
	if a, ok := r.cache.get(key); ok {
		return a.allowed, a.reason, nil
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: who.name, UID: who.uid, Groups: who.groups, Extra: who.extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	var got *authzv1.SubjectAccessReview
	err := retryReview(ctx, r.backoff, func(ctx context.Context) error {
		var err error
		got, err = r.review(ctx, sar)
		return err
	})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	a := accessAnswer{allowed: got.Status.Allowed && !got.Status.Denied, reason: got.Status.Reason}
	if got.Status.EvaluationError != "" && !a.allowed {
		// The authorizer chain failed part-way: not an answer to keep.
		return false, "", fmt.Errorf("SubjectAccessReview: %s", got.Status.EvaluationError)
	}
	ttl := r.denyTTL
	if a.allowed {
		ttl = r.allowTTL
	}
	r.cache.put(key, a, ttl)
	return a.allowed, a.reason, nil
}

// accessKey is one cache key per user (name, UID, groups, extra), verb
// and path.
func accessKey(who *identity, verb, path string) string {
	var b strings.Builder
	for _, s := range []string{verb, path, who.name, who.uid} {
		fmt.Fprintf(&b, "%d:%s", len(s), s)
	}
	for _, g := range who.groups {
		fmt.Fprintf(&b, "g%d:%s", len(g), g)
	}
	keys := make([]string, 0, len(who.extra))
	for k := range who.extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "e%d:%s", len(k), k)
		for _, v := range who.extra[k] {
			fmt.Fprintf(&b, "v%d:%s", len(v), v)
		}
	}
	return b.String()
}

// reviewers builds both against the API server of the clients given.
func reviewers(tokens func(context.Context, *authnv1.TokenReview, metav1.CreateOptions) (*authnv1.TokenReview, error),
	access func(context.Context, *authzv1.SubjectAccessReview, metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)) (*tokenReviewer, *accessReviewer) {
	now := time.Now
	return &tokenReviewer{
			review: func(ctx context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
				return tokens(ctx, tr, metav1.CreateOptions{})
			},
			timeout: reviewTimeout, backoff: *reviewBackoff(), ttl: authnCacheTTL,
			cache: newTTLCache[*identity](now),
		}, &accessReviewer{
			review: func(ctx context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
				return access(ctx, sar, metav1.CreateOptions{})
			},
			backoff: *reviewBackoff(), allowTTL: authzAllowTTL, denyTTL: authzDenyTTL,
			cache: newTTLCache[accessAnswer](now),
		}
}
