package ovsdb

import (
	"encoding/json"
	"fmt"
	"reflect"
)

const (
	// OperationInsert is an insert operation
	OperationInsert = "insert"
	// OperationSelect is a select operation
	OperationSelect = "select"
	// OperationUpdate is an update operation
	OperationUpdate = "update"
	// OperationMutate is a mutate operation
	OperationMutate = "mutate"
	// OperationDelete is a delete operation
	OperationDelete = "delete"
	// OperationWait is a wait operation
	OperationWait = "wait"
	// OperationCommit is a commit operation
	OperationCommit = "commit"
	// OperationAbort is an abort operation
	OperationAbort = "abort"
	// OperationComment is a comment operation
	OperationComment = "comment"
	// OperationAssert is an assert operation
	OperationAssert = "assert"
)

// Operation represents an operation according to RFC7047 section 5.2
type Operation struct {
	Op        string      `json:"op"`
	Table     string      `json:"table,omitempty"`
	Row       Row         `json:"row,omitempty"`
	Rows      []Row       `json:"rows,omitempty"`
	Columns   []string    `json:"columns,omitempty"`
	Mutations []Mutation  `json:"mutations,omitempty"`
	Timeout   *int        `json:"timeout,omitempty"`
	Where     []Condition `json:"where,omitempty"`
	Until     string      `json:"until,omitempty"`
	Durable   *bool       `json:"durable,omitempty"`
	Comment   *string     `json:"comment,omitempty"`
	Lock      *string     `json:"lock,omitempty"`
	UUID      string      `json:"uuid,omitempty"`
	UUIDName  string      `json:"uuid-name,omitempty"`
}

// MarshalJSON marshalls 'Operation' to a byte array
// For 'select' operations, we don't omit the 'Where' field
// to allow selecting all rows of a table
func (o Operation) MarshalJSON() ([]byte, error) {
	type OpAlias Operation
	switch o.Op {
	case "select":
		where := o.Where
		if where == nil {
			where = make([]Condition, 0)
		}
		return json.Marshal(&struct {
			Where []Condition `json:"where"`
			OpAlias
		}{
			Where:   where,
			OpAlias: (OpAlias)(o),
		})
	default:
		return json.Marshal(&struct {
			OpAlias
		}{
			OpAlias: (OpAlias)(o),
		})
	}
}

// MonitorRequests represents a group of monitor requests according to RFC7047
// We cannot use MonitorRequests by inlining the MonitorRequest Map structure till GoLang issue #6213 makes it.
// The only option is to go with raw map[string]any option :-( that sucks !
// Refer to client.go : MonitorAll() function for more details
type MonitorRequests struct {
	Requests map[string]MonitorRequest `json:"requests"`
}

// MonitorRequest represents a monitor request according to RFC7047
type MonitorRequest struct {
	Columns []string       `json:"columns,omitempty"`
	Where   []Condition    `json:"where,omitempty"`
	Select  *MonitorSelect `json:"select,omitempty"`
}

// TransactResponse represents the response to a Transact Operation
type TransactResponse struct {
	Result []OperationResult `json:"result"`
	Error  string            `json:"error"`
}

// OperationResult is the result of an Operation
type OperationResult struct {
	Count   int    `json:"count,omitempty"`
	Error   string `json:"error,omitempty"`
	Details string `json:"details,omitempty"`
	UUID    UUID   `json:"uuid,omitempty"`
	Rows    []Row  `json:"rows,omitempty"`
}

// AsUpstream, when set, makes this package decode and convert as
// upstream's does where the copy differs (SHARDNET.md): ovsSliceToGoNotation
// encodes each array it is given back to JSON and decodes that again into
// a UUID, OvsSet or OvsMap, whose own decoding does the same for every
// element; Row and MonitorCondSinceReply decode through json.Unmarshal;
// OvsToNative converts every column through reflection. It is there for
// the benchmarks' baselines (BenchmarkRowDecode and BenchmarkReplyDecode
// in this package, BenchmarkMonitorLoadCPU in shardnet's ovn package) and
// the tests that compare the two; nothing else sets it.
var AsUpstream = false

// ovsSliceToGoNotation converts a value decoded from JSON into any (RFC
// 7047's notation: an atom, ["uuid", id], ["named-uuid", id], ["set",
// [atom...]] or ["map", [[key, value]...]]) to its Go notation: the atom
// itself, a UUID, an OvsSet or an OvsMap. Arrays of other kinds are
// returned as they are.
//
// Upstream encoded each array back to JSON and decoded that again (and
// OvsSet and OvsMap did so for each element they held): three to four
// passes of encoding/json over every set, map and UUID of every row the
// client reads, the first monitor's whole database included. This copy
// converts the decoded values directly, to the same values
// (TestGoNotationAsUpstream); an array too short for its kind, or a map
// key that is not an atom, is an error where upstream panicked.
func ovsSliceToGoNotation(val any) (any, error) {
	if AsUpstream {
		return ovsSliceToGoNotationUpstream(val)
	}
	sl, ok := val.([]any)
	if !ok {
		return val, nil
	}
	if len(sl) == 0 {
		return nil, notationError("an empty array")
	}
	switch sl[0] {
	case "uuid", "named-uuid":
		return uuidFromNotation(sl)
	case "set":
		return setFromNotation(sl)
	case "map":
		return mapFromNotation(sl)
	}
	return val, nil
}

// notationError says why a value is not in RFC 7047's notation.
func notationError(what string) error {
	return fmt.Errorf("ovsdb: not a value of RFC 7047's notation: %s", what)
}

// uuidFromNotation converts ["uuid", id] or ["named-uuid", id]. As
// upstream's UUID.UnmarshalJSON, which decodes into []string and drops
// the decoding's error: an array with an element that is not a string
// (null reads as "") is the empty UUID, and elements after the second are
// ignored.
func uuidFromNotation(sl []any) (UUID, error) {
	for _, e := range sl {
		if _, ok := e.(string); !ok && e != nil {
			return UUID{}, nil
		}
	}
	if len(sl) < 2 {
		return UUID{}, notationError(fmt.Sprintf("%v without its id", sl[0]))
	}
	id, _ := sl[1].(string)
	return UUID{GoUUID: id}, nil
}

// setFromNotation converts ["set", [atom...]], each atom converted in turn.
func setFromNotation(sl []any) (OvsSet, error) {
	if len(sl) < 2 {
		return OvsSet{}, notationError("a set without its elements")
	}
	inner, ok := sl[1].([]any)
	if !ok {
		return OvsSet{}, notationError("a set whose elements are not an array")
	}
	set := OvsSet{GoSet: make([]any, 0, len(inner))}
	for _, e := range inner {
		v, err := ovsSliceToGoNotation(e)
		if err != nil {
			return set, err
		}
		set.GoSet = append(set.GoSet, v)
	}
	return set, nil
}

// mapFromNotation converts ["map", [[key, value]...]]. As upstream, a key
// or value that is an array must be a pair that is not a map, and
// elements of a pair after the second are ignored; ["map"] alone is the
// empty map.
func mapFromNotation(sl []any) (OvsMap, error) {
	m := OvsMap{GoMap: make(map[any]any)}
	if len(sl) < 2 {
		return m, nil
	}
	inner, ok := sl[1].([]any)
	if !ok {
		return m, notationError("a map whose pairs are not an array")
	}
	for _, e := range inner {
		pair, ok := e.([]any)
		if !ok || len(pair) < 2 {
			return m, notationError("a map's pair that is not an array of two")
		}
		k, err := mapElement(pair[0])
		if err != nil {
			return m, err
		}
		switch k.(type) {
		case UUID, string, float64, bool, nil:
		default:
			return m, notationError(fmt.Sprintf("a map key that is not an atom: %v", pair[0]))
		}
		v, err := mapElement(pair[1])
		if err != nil {
			return m, err
		}
		m.GoMap[k] = v
	}
	return m, nil
}

// mapElement converts a map's key or value.
func mapElement(e any) (any, error) {
	sl, ok := e.([]any)
	if !ok {
		return e, nil
	}
	if len(sl) != 2 || sl[0] == "map" {
		return nil, &json.UnmarshalTypeError{Value: reflect.ValueOf(sl).String(), Type: reflect.TypeOf(OvsMap{})}
	}
	return ovsSliceToGoNotation(sl)
}

// ovsSliceToGoNotationUpstream is upstream's ovsSliceToGoNotation.
func ovsSliceToGoNotationUpstream(val any) (any, error) {
	switch sl := val.(type) {
	case []any:
		bsliced, err := json.Marshal(sl)
		if err != nil {
			return nil, err
		}
		switch sl[0] {
		case "uuid", "named-uuid":
			var uuid UUID
			err = json.Unmarshal(bsliced, &uuid)
			return uuid, err
		case "set":
			var oSet OvsSet
			err = json.Unmarshal(bsliced, &oSet)
			return oSet, err
		case "map":
			var oMap OvsMap
			err = json.Unmarshal(bsliced, &oMap)
			return oMap, err
		}
		return val, nil
	}
	return val, nil
}
