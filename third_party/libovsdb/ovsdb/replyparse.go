package ovsdb

// This file is shardnet's (see SHARDNET.md): the reply to a monitor read
// in one pass over the bytes it came in.

import "sync/atomic"

// parseCondSinceReply decodes [found, last-txn-id, updates] in one pass
// over b, each row as Row.UnmarshalJSON decodes it. It takes only the form
// ovsdb-server sends: a boolean, a string, and tables of row updates whose
// members are "initial", "insert", "modify" and "delete", each a row or
// null. For anything else (another type, a member named otherwise or in
// other case, malformed JSON, a row Row.UnmarshalJSON refuses) it returns
// false, and the caller decodes b with encoding/json, which gives that
// input's value or error. What it returns on true is what encoding/json
// gives (TestCondSinceReplyParseAsDecoder).
//
// encoding/json, handed the reply, copied it into a decoder's buffer and
// scanned it twice (to find each element's end, then to decode it); the
// rows were scanned a third time by Row.UnmarshalJSON. A first monitor's
// reply holds every row the client monitors.
func parseCondSinceReply(b []byte, build func(table, uuid string, row *Row) (any, error)) (MonitorCondSinceReply, bool) {
	var reply MonitorCondSinceReply
	p := rowParser{b: b, build: build}
	if !p.punct('[') {
		return reply, false
	}
	p.space()
	switch {
	case p.i < len(b) && b[p.i] == 't':
		if p.literal("true") != nil {
			return reply, false
		}
		reply.Found = true
	case p.i < len(b) && b[p.i] == 'f':
		if p.literal("false") != nil {
			return reply, false
		}
	default:
		return reply, false
	}
	if !p.punct(',') || !p.at('"') {
		return reply, false
	}
	id, err := p.string()
	if err != nil || !p.punct(',') {
		return reply, false
	}
	reply.LastTransactionID = id
	p.space()
	if !p.null() {
		updates, ok := p.tableUpdates()
		if !ok {
			return reply, false
		}
		reply.Updates = updates
	}
	if !p.punct(']') || !p.end() {
		return reply, false
	}
	return reply, true
}

// ModelsBuilt counts the rows made models while their reply was read
// (MonitorCondSinceReply's BuildModel), for tests.
var ModelsBuilt atomic.Int64

// punct skips white space and then c, reporting whether c was there.
func (p *rowParser) punct(c byte) bool {
	if !p.at(c) {
		return false
	}
	p.i++
	return true
}

// at skips white space and reports whether c is next.
func (p *rowParser) at(c byte) bool {
	p.space()
	return p.i < len(p.b) && p.b[p.i] == c
}

// members decodes an object's members, handing each key to member with
// p.i at its value; member decodes the value. null where the object is
// expected is refused (false): the callers' null cases are their own.
func (p *rowParser) members(member func(key string) bool) bool {
	if !p.punct('{') {
		return false
	}
	if p.punct('}') {
		return true
	}
	for {
		if !p.at('"') {
			return false
		}
		key, err := p.string()
		if err != nil || !p.punct(':') {
			return false
		}
		p.space()
		if !member(key) {
			return false
		}
		switch {
		case p.punct(','):
		case p.punct('}'):
			return true
		default:
			return false
		}
	}
}

// null takes a null at p.i, reporting whether there was one.
func (p *rowParser) null() bool {
	if p.i < len(p.b) && p.b[p.i] == 'n' {
		return p.literal("null") == nil
	}
	return false
}

// tableUpdates decodes {table: {uuid: row update or null} or null}.
func (p *rowParser) tableUpdates() (TableUpdates2, bool) {
	updates := TableUpdates2{}
	ok := p.members(func(table string) bool {
		if p.null() {
			updates[table] = nil
			return true
		}
		rows := TableUpdate2{}
		if !p.members(func(uuid string) bool {
			if p.null() {
				rows[uuid] = nil
				return true
			}
			update, ok := p.rowUpdate()
			rows[uuid] = update
			return ok && p.buildModel(table, uuid, update)
		}) {
			return false
		}
		updates[table] = rows
		return true
	})
	return updates, ok
}

// rowUpdate decodes {"initial"|"insert"|"modify"|"delete": row or null}.
func (p *rowParser) rowUpdate() (*RowUpdate2, bool) {
	update := &RowUpdate2{}
	ok := p.members(func(key string) bool {
		var field **Row
		switch key {
		case "initial":
			field = &update.Initial
		case "insert":
			field = &update.Insert
		case "modify":
			field = &update.Modify
		case "delete":
			field = &update.Delete
		default:
			return false
		}
		if p.null() {
			*field = nil
			return true
		}
		row, ok := p.row()
		*field = row
		return ok
	})
	return update, ok
}

// buildModel hands the row of update's Initial, or else of its Insert, to
// p.build, if set, and keeps what it builds in the row's place. It
// reports false when p.build fails.
func (p *rowParser) buildModel(table, uuid string, update *RowUpdate2) bool {
	row := update.Initial
	if row == nil {
		row = update.Insert
	}
	if p.build == nil || row == nil {
		return true
	}
	m, err := p.build(table, uuid, row)
	if err != nil {
		return false
	}
	if m != nil {
		update.Model, update.Initial, update.Insert = m, nil, nil
		ModelsBuilt.Add(1)
	}
	return true
}

// row decodes a row object at p.i as parseRow does.
func (p *rowParser) row() (*Row, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	m, err := p.object()
	if err != nil || toGoNotation(m) != nil {
		return nil, false
	}
	row := Row(m)
	return &row, true
}
