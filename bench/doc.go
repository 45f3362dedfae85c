// Package bench holds the benchmark programs that measure shardnet against
// the raw write rate of the API server and the Northbound database.
package bench
