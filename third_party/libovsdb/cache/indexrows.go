package cache

// indexRows is what an index maps one value to: the UUIDs of the rows that
// have the value. A schema index maps a value to one row, and a client
// index mostly does too, so that one UUID is kept inline and a set is made
// only for more than one. A set of one cost about 180 bytes per row and
// index, most of the memory of the indexes of a large table.
//
// An indexRows is a value: with and without return the changed one, which
// the caller stores back. A set of more than one is changed in place, as
// the index's sets always were, under the row cache's lock.
type indexRows struct {
	one  string  // the UUID when there is exactly one
	many uuidset // the UUIDs when there are more than one, else nil
}

func (e indexRows) len() int {
	if e.many != nil {
		return len(e.many)
	}
	if e.one != "" {
		return 1
	}
	return 0
}

func (e indexRows) empty() bool { return e.len() == 0 }

func (e indexRows) has(uuid string) bool {
	if e.many != nil {
		return e.many.has(uuid)
	}
	return e.one != "" && e.one == uuid
}

// only reports whether uuid is the one row.
func (e indexRows) only(uuid string) bool { return e.len() == 1 && e.has(uuid) }

func (e indexRows) getAny() string {
	if e.many != nil {
		return e.many.getAny()
	}
	return e.one
}

func (e indexRows) list() []string {
	if e.many != nil {
		return e.many.list()
	}
	if e.one != "" {
		return []string{e.one}
	}
	return []string{}
}

// each calls f with every UUID.
func (e indexRows) each(f func(uuid string)) {
	if e.one != "" {
		f(e.one)
	}
	for uuid := range e.many {
		f(uuid)
	}
}

// set returns the UUIDs as a set: the index's own when there are more than
// one, which the caller must not change, else a new one.
func (e indexRows) set() uuidset {
	if e.many != nil {
		return e.many
	}
	if e.one != "" {
		return newUUIDSet(e.one)
	}
	return uuidset{}
}

// with returns e with uuid added.
func (e indexRows) with(uuid string) indexRows {
	switch {
	case e.many != nil:
		e.many.add(uuid)
	case AsUpstream:
		e.many = newUUIDSet(uuid)
	case e.one == "" || e.one == uuid:
		e.one = uuid
	default:
		e.many = newUUIDSet(e.one, uuid)
		e.one = ""
	}
	return e
}

// without returns e with uuid removed.
func (e indexRows) without(uuid string) indexRows {
	switch {
	case e.many != nil:
		e.many.remove(uuid)
		if len(e.many) == 1 && !AsUpstream {
			return indexRows{one: e.many.getAny()}
		}
	case e.one == uuid:
		e.one = ""
	}
	return e
}

// AsUpstream, when set before a cache is filled, makes it do as upstream's
// does where this copy differs: its indexes keep a set for a value of one
// row too, and Populate2 keeps every decoded row until it returns. It is
// the baseline of the benchmarks that measure what the copy saves.
var AsUpstream = false
