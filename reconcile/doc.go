// Package reconcile holds the pod and subnet reconcilers.
package reconcile
