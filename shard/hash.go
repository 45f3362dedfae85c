package shard

import (
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// DefaultShards is the number of virtual shards when none is configured. It
// is fixed for the life of a cluster: changing it remaps every key.
const DefaultShards = 64

// Of returns the shard of key ("namespace/name") among shards virtual
// shards: xxhash64(key) % shards. It panics if shards is not positive, since
// that is a configuration bug the constructors already reject.
func Of(key string, shards int) int {
	if shards <= 0 {
		panic("shard.Of: shards must be positive")
	}
	return int(xxhash.Sum64String(key) % uint64(shards))
}

// score is the rendezvous (highest random weight) score of member for shard:
// every member ranks every shard independently, so removing a member only
// changes the winner of the shards that member won.
func score(member string, shard int) uint64 {
	d := xxhash.New()
	_, _ = d.WriteString(member)
	_, _ = d.Write([]byte{0})
	_, _ = d.WriteString(strconv.Itoa(shard))
	return d.Sum64()
}
