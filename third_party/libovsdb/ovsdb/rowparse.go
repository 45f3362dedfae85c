package ovsdb

// This file is shardnet's (see SHARDNET.md): a row decoded in one pass.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// reflectFloat64 is the type a number decodes to, named in its errors.
var reflectFloat64 = reflect.TypeOf(float64(0))

// maxDepth is how deeply values may nest, as in encoding/json.
const maxDepth = 10000

// rowParser decodes JSON into the values encoding/json gives an any
// (map[string]any, []any, string, float64, bool, nil), in one pass and
// without checking the whole input first. encoding/json hands an
// Unmarshaler the bytes of one value it has already scanned, so Row's
// UnmarshalJSON had the row checked twice and then decoded. The parser
// still refuses what is not JSON (TestRowParseAsEncodingJSON).
type rowParser struct {
	b     []byte
	i     int
	depth int
	// build is MonitorCondSinceReply's BuildModel, for a reply's rows.
	build func(table, uuid string, row *Row) (any, error)
}

func (p *rowParser) errorf(format string, args ...any) error {
	return fmt.Errorf("ovsdb: decoding a row at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *rowParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end reports whether nothing but white space is left.
func (p *rowParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

func (p *rowParser) value() (any, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *rowParser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.errorf("not %s", word)
	}
	p.i += len(word)
	return nil
}

func (p *rowParser) nest() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("nested too deeply")
	}
	return nil
}

// object decodes an object whose '{' is at p.i.
func (p *rowParser) object() (map[string]any, error) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	p.i++
	m := make(map[string]any)
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		p.depth--
		return m, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errorf("expected an object's key")
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf("expected ':' after an object's key")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.space()
		if p.i >= len(p.b) {
			return nil, p.errorf("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return m, nil
		default:
			return nil, p.errorf("expected ',' or '}' in an object")
		}
	}
}

// array decodes an array whose '[' is at p.i.
func (p *rowParser) array() ([]any, error) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	p.i++
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		p.depth--
		return a, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, p.errorf("unexpected end of input in an array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return a, nil
		default:
			return nil, p.errorf("expected ',' or ']' in an array")
		}
	}
}

// string decodes a string whose opening quote is at p.i. One of plain
// ASCII without escapes is taken as it is; any other is left to
// encoding/json, for its escapes and its replacement of invalid UTF-8.
func (p *rowParser) string() (string, error) {
	start := p.i
	plain := true
	for j := start + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			if plain {
				return string(p.b[start+1 : j]), nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:j+1], &s); err != nil {
				return "", err
			}
			return s, nil
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			p.i = j
			return "", p.errorf("a control character in a string")
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	p.i = len(p.b)
	return "", p.errorf("unexpected end of input in a string")
}

// number decodes a number at p.i (JSON's grammar, checked) as a float64,
// as encoding/json does for an any.
func (p *rowParser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case digits() == 0:
		return nil, p.errorf("a number without digits")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("a number without digits after its point")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("a number without digits in its exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		return nil, &json.UnmarshalTypeError{Value: "number " + string(p.b[start:p.i]), Type: reflectFloat64, Offset: int64(start)}
	}
	return f, nil
}
