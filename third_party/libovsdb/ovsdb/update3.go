package ovsdb

import (
	"bytes"
	"encoding/json"
	"fmt"
)

type MonitorCondSinceReply struct {
	Found             bool
	LastTransactionID string
	Updates           TableUpdates2
	// BuildModel, when set, is handed the row of each update's Initial,
	// or else of its Insert, as UnmarshalJSON reads it, and returns the
	// row as a model, which the update keeps in Model in the row's place;
	// nil (with no error) keeps the row. The reply's rows then need not
	// all be held at once beside the models built from them. It applies
	// to replies read in one pass (parseCondSinceReply); an error from it
	// makes UnmarshalJSON decode the reply as encoding/json does, rows
	// kept. shardnet's copy: see SHARDNET.md.
	BuildModel func(table, uuid string, row *Row) (any, error) `json:"-"`
}

func (m MonitorCondSinceReply) MarshalJSON() ([]byte, error) {
	v := []any{m.Found, m.LastTransactionID, m.Updates}
	return json.Marshal(v)
}

// UnmarshalJSON decodes [found, last-txn-id, updates]. Upstream decoded
// the array into three raw messages and each of them again, so the
// updates, which in the reply to a first monitor are the whole database,
// were scanned four times before their rows were decoded. The copy reads
// the form ovsdb-server sends in one pass (parseCondSinceReply) and
// anything else with a decoder over the array, which scans each element
// once as it decodes it.
func (m *MonitorCondSinceReply) UnmarshalJSON(b []byte) error {
	if AsUpstream {
		return m.unmarshalJSONUpstream(b)
	}
	if reply, ok := parseCondSinceReply(b, m.BuildModel); ok {
		reply.BuildModel = m.BuildModel
		*m = reply
		return nil
	}
	build := m.BuildModel
	err := m.unmarshalJSONDecoder(b)
	m.BuildModel = build
	return err
}

// unmarshalJSONDecoder decodes what parseCondSinceReply does not take, as
// encoding/json does.
func (m *MonitorCondSinceReply) unmarshalJSONDecoder(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('[') {
		return fmt.Errorf("expected a 3 element json array, got %v", tok)
	}
	var reply MonitorCondSinceReply
	for i, into := range []any{&reply.Found, &reply.LastTransactionID, &reply.Updates} {
		if !dec.More() {
			return fmt.Errorf("expected a 3 element json array. there are %d elements", i)
		}
		if err := dec.Decode(into); err != nil {
			return err
		}
	}
	if dec.More() {
		return fmt.Errorf("expected a 3 element json array. there are more")
	}
	*m = reply
	return nil
}

// unmarshalJSONUpstream is upstream's UnmarshalJSON.
func (m *MonitorCondSinceReply) unmarshalJSONUpstream(b []byte) error {
	var v []json.RawMessage
	err := json.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	if len(v) != 3 {
		return fmt.Errorf("expected a 3 element json array. there are %d elements", len(v))
	}

	var found bool
	err = json.Unmarshal(v[0], &found)
	if err != nil {
		return err
	}

	var lastTransactionID string
	err = json.Unmarshal(v[1], &lastTransactionID)
	if err != nil {
		return err
	}

	var updates TableUpdates2
	err = json.Unmarshal(v[2], &updates)
	if err != nil {
		return err
	}

	m.Found = found
	m.LastTransactionID = lastTransactionID
	m.Updates = updates
	return nil
}
