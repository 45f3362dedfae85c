// Package shard maps pod keys to S virtual shards (xxhash64 of
// "namespace/name" modulo S), keeps a member Lease per replica, elects a
// leader that assigns shards to ready members, and runs the handoff that
// moves a shard from one owner to the next with a growing epoch.
package shard
