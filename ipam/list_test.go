package ipam

import (
	"errors"
	"testing"
)

func TestParseIPPoolAnnotation(t *testing.T) {
	tests := []struct {
		in      string
		pool    string
		list    []string
		wantErr error
	}{
		{in: "pool-a", pool: "pool-a"},
		{in: " pool-a ", pool: "pool-a"},
		{in: "10.0.0.5", list: []string{"10.0.0.5"}},
		{in: "10.0.0.5,10.0.0.6,10.0.0.7", list: []string{"10.0.0.5", "10.0.0.6", "10.0.0.7"}},
		{in: "10.0.0.5, 10.0.0.6", list: []string{"10.0.0.5", "10.0.0.6"}},
		// Exactly two of different families: one dual-stack entry.
		{in: "10.0.0.5,fd00::5", list: []string{"10.0.0.5,fd00::5"}},
		{in: "fd00::5,10.0.0.5", list: []string{"10.0.0.5,fd00::5"}},
		{in: "10.0.0.5,fd00::5;10.0.0.6,fd00::6", list: []string{"10.0.0.5,fd00::5", "10.0.0.6,fd00::6"}},
		{in: "10.0.0.5;10.0.0.6", list: []string{"10.0.0.5", "10.0.0.6"}},
		{in: "fd00::5,fd00::6,fd00::7", list: []string{"fd00::5", "fd00::6", "fd00::7"}},
		{in: "", wantErr: ErrInvalid},
		{in: "10.0.0.5,,10.0.0.6", wantErr: ErrInvalid},
		{in: "10.0.0.5;", wantErr: ErrInvalid},
		{in: "10.0.0.5,10.0.0.6;10.0.0.7", wantErr: ErrInvalid},
		{in: "10.0.0.5,pool-a", wantErr: ErrInvalid},
		{in: "10.0.0.5,fd00::5,fd00::6;10.0.0.6", wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ref, err := ParseIPPoolAnnotation(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %+v, %v; want %v", ref, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.Pool != tt.pool || len(ref.List) != len(tt.list) {
				t.Fatalf("got %+v; want pool %q list %v", ref, tt.pool, tt.list)
			}
			for i, a := range ref.List {
				if a.String() != tt.list[i] {
					t.Fatalf("entry %d = %s, want %s", i, a, tt.list[i])
				}
			}
		})
	}
}

func TestStatefulSetOrdinal(t *testing.T) {
	tests := []struct {
		name string
		ord  int
		ok   bool
	}{
		{"web-0", 0, true},
		{"web-12", 12, true},
		{"my-app-db-3", 3, true},
		{"web", 0, false},
		{"web-", 0, false},
		{"web-x", 0, false},
		{"web-1a", 0, false},
		{"web-+1", 0, false},
	}
	for _, tt := range tests {
		ord, ok := StatefulSetOrdinal(tt.name)
		if ord != tt.ord || ok != tt.ok {
			t.Errorf("StatefulSetOrdinal(%q) = %d, %v; want %d, %v", tt.name, ord, ok, tt.ord, tt.ok)
		}
	}
}

func TestAtOrdinal(t *testing.T) {
	list, err := ParseAddressList("10.0.0.5,fd00::5;10.0.0.6,fd00::6")
	if err != nil {
		t.Fatal(err)
	}
	for ord, want := range []string{"10.0.0.5,fd00::5", "10.0.0.6,fd00::6"} {
		a, err := AtOrdinal(list, ord)
		if err != nil || a.String() != want {
			t.Fatalf("AtOrdinal(%d) = %s, %v; want %s", ord, a, err, want)
		}
	}
	for _, ord := range []int{2, 100, -1} {
		if _, err := AtOrdinal(list, ord); !errors.Is(err, ErrOrdinal) {
			t.Fatalf("AtOrdinal(%d): %v, want ErrOrdinal", ord, err)
		}
	}
}

func TestParseAddresses(t *testing.T) {
	for _, bad := range []string{"", "10.0.0.1,10.0.0.2", "fd00::1,fd00::2", "10.0.0.1,fd00::1,10.0.0.3", "x"} {
		if _, err := ParseAddresses(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseAddresses(%q): %v, want ErrInvalid", bad, err)
		}
	}
	a, err := ParseAddresses("fd00::1,10.0.0.1")
	if err != nil || a.V4 != mustAddr(t, "10.0.0.1") || a.V6 != mustAddr(t, "fd00::1") {
		t.Fatalf("ParseAddresses = %+v, %v", a, err)
	}
}
