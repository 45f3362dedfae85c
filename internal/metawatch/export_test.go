package metawatch

// PageSize is pageSize, for the tests to lower.
var PageSize = &pageSize
