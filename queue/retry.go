package queue

import (
	"errors"
	"time"
)

// RetryDelay reports the delay of an error made by RetryAfter (also when
// wrapped), for callers that run their own workqueue.
func RetryDelay(err error) (time.Duration, bool) {
	var after *retryAfter
	if errors.As(err, &after) {
		return after.d, true
	}
	return 0, false
}
