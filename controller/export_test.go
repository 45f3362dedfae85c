package controller

// FirstPassKeys is the number of seeded keys whose first pass the heap
// collector still counts as in progress, for the tests of the package's
// users.
func (c *Controller) FirstPassKeys() int { return c.passes.inProgress() }

// BurstsInProgress is the number of bursts (cache loads, first passes)
// that hold the process's collector target.
func BurstsInProgress() int {
	processBursts.mu.Lock()
	defer processBursts.mu.Unlock()
	return processBursts.bursts
}
