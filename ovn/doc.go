// Package ovn is shardnet's OVN Northbound client: connection handling,
// the per-shard batcher with its epoch fence, and typed op builders. The
// generated models are in package nbdb.
package ovn
