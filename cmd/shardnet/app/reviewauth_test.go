package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func tokenRequest(token string) *http.Request {
	req := httptest.NewRequest("GET", "/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// fastBackoff retries at once, three times.
var fastBackoff = wait.Backoff{Duration: time.Microsecond, Steps: 3}

// TestTokenReviewer: a token is reviewed once per TTL, rejected tokens
// are remembered too, the review is retried on a server error but not on
// a refusal, and the token itself is what the review is asked about.
func TestTokenReviewer(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	var asked []string
	failures := map[string]error{}
	r := &tokenReviewer{
		review: func(_ context.Context, tr *authnv1.TokenReview) (*authnv1.TokenReview, error) {
			asked = append(asked, tr.Spec.Token)
			if err := failures[tr.Spec.Token]; err != nil {
				if !apierrors.IsForbidden(err) {
					delete(failures, tr.Spec.Token) // fails once
				}
				return nil, err
			}
			out := tr.DeepCopy()
			if tr.Spec.Token == "good" {
				out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{
					Username: "scraper", UID: "u1", Groups: []string{"g"},
					Extra: map[string]authnv1.ExtraValue{"k": {"v"}},
				}}
			}
			return out, nil
		},
		timeout: time.Minute, backoff: fastBackoff, ttl: time.Minute,
		cache: newTTLCache[*identity](clock.now),
	}

	if _, ok, err := r.authenticate(tokenRequest("")); ok || err != nil || len(asked) != 0 {
		t.Fatalf("no token: ok %v err %v, %d reviews", ok, err, len(asked))
	}
	who, ok, err := r.authenticate(tokenRequest("good"))
	if !ok || err != nil || who.name != "scraper" || who.uid != "u1" || len(who.groups) != 1 || who.extra["k"][0] != "v" {
		t.Fatalf("good token: %+v %v %v", who, ok, err)
	}
	for range 3 {
		r.authenticate(tokenRequest("good"))
		if _, ok, _ := r.authenticate(tokenRequest("bad")); ok {
			t.Fatal("bad token accepted")
		}
	}
	if fmt.Sprint(asked) != "[good bad]" {
		t.Fatalf("reviews %v, want one per token", asked)
	}
	clock.t = clock.t.Add(time.Minute)
	r.authenticate(tokenRequest("good"))
	if len(asked) != 3 {
		t.Fatalf("an expired answer was not reviewed again: %v", asked)
	}

	// A server error is retried; a refusal is not, and is not cached.
	failures["flaky"] = apierrors.NewInternalError(errors.New("etcd"))
	if _, ok, err := r.authenticate(tokenRequest("flaky")); ok || err != nil {
		t.Fatalf("flaky: ok %v err %v", ok, err)
	}
	if n := len(asked); n != 5 {
		t.Fatalf("flaky reviewed %d times, want 2", n-3)
	}
	failures["denied"] = apierrors.NewForbidden(schema.GroupResource{Resource: "tokenreviews"}, "", errors.New("rbac"))
	if _, ok, err := r.authenticate(tokenRequest("denied")); ok || err == nil {
		t.Fatalf("refused review: ok %v err %v", ok, err)
	}
	r.authenticate(tokenRequest("denied"))
	if n := len(asked); n != 7 {
		t.Fatalf("a refused review was retried or cached: %d reviews, want 7", n)
	}
}

// TestAccessReviewer: one review per user, verb and path; allows and
// denies expire after their own TTL; the review carries the user whole.
func TestAccessReviewer(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	var asked []authzv1.SubjectAccessReviewSpec
	r := &accessReviewer{
		review: func(_ context.Context, sar *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
			asked = append(asked, sar.Spec)
			out := sar.DeepCopy()
			a := sar.Spec.NonResourceAttributes
			out.Status.Allowed = sar.Spec.User == "scraper" && a.Verb == "get" && a.Path == "/metrics"
			return out, nil
		},
		backoff: fastBackoff, allowTTL: time.Minute, denyTTL: 10 * time.Second,
		cache: newTTLCache[accessAnswer](clock.now),
	}
	ctx := context.Background()
	scraper := &identity{name: "scraper", uid: "u1", groups: []string{"g"}, extra: map[string]authzv1.ExtraValue{"k": {"v"}}}
	if ok, _, err := r.authorize(ctx, scraper, "get", "/metrics"); !ok || err != nil {
		t.Fatalf("scraper get /metrics: %v %v", ok, err)
	}
	s := asked[0]
	if s.User != "scraper" || s.UID != "u1" || len(s.Groups) != 1 || s.Extra["k"][0] != "v" || s.ResourceAttributes != nil {
		t.Fatalf("review asked %+v", s)
	}
	if ok, _, _ := r.authorize(ctx, scraper, "post", "/metrics"); ok {
		t.Fatal("post allowed")
	}
	if ok, _, _ := r.authorize(ctx, &identity{name: "scraper"}, "get", "/metrics"); !ok {
		t.Fatal("the same name without the groups was not reviewed on its own")
	}
	if len(asked) != 3 {
		t.Fatalf("%d reviews, want 3", len(asked))
	}
	r.authorize(ctx, scraper, "get", "/metrics")
	r.authorize(ctx, scraper, "post", "/metrics")
	if len(asked) != 3 {
		t.Fatalf("cached answers reviewed again: %d reviews", len(asked))
	}
	clock.t = clock.t.Add(10 * time.Second)
	r.authorize(ctx, scraper, "get", "/metrics")
	r.authorize(ctx, scraper, "post", "/metrics")
	if len(asked) != 4 || asked[3].NonResourceAttributes.Verb != "post" {
		t.Fatalf("after the deny TTL: %d reviews, want only the deny again", len(asked))
	}
}

// TestTTLCacheBound: a full cache drops its expired entries first, and
// starts over when none has expired.
func TestTTLCacheBound(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	c := newTTLCache[int](clock.now)
	for i := range reviewCacheSize / 2 {
		c.put(fmt.Sprint("old", i), i, time.Second)
	}
	clock.t = clock.t.Add(time.Second)
	for i := range reviewCacheSize / 2 {
		c.put(fmt.Sprint("new", i), i, time.Minute)
	}
	c.put("one more", 1, time.Minute)
	if len(c.entries) != reviewCacheSize/2+1 {
		t.Fatalf("%d entries, want the expired ones dropped", len(c.entries))
	}
	if v, ok := c.get("new7"); !ok || v != 7 {
		t.Fatal("a live entry was dropped")
	}
	for i := range reviewCacheSize {
		c.put(fmt.Sprint("more", i), i, time.Minute)
	}
	if len(c.entries) > reviewCacheSize {
		t.Fatalf("%d entries over the bound", len(c.entries))
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer  ": ""} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", header)
		if got, ok := bearerToken(req); got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", header, got, ok, want)
		}
	}
}
