package maps

import (
	"strings"
	"testing"
)

// TestParseIntRange: the edges of every range, in both bases, and words
// past 64 bits, which are integers that do not fit (not non-integers).
func TestParseIntRange(t *testing.T) {
	for _, c := range []struct {
		word           string
		bits           int
		signed, either bool
		want           uint64
		err            string
	}{
		{word: "255", bits: 8, want: 255},
		{word: "0xff", bits: 8, want: 255},
		{word: "0XFF", bits: 8, want: 255},
		{word: "256", bits: 8, err: "does not fit the w x (unsigned 0..255)"},
		{word: "-1", bits: 8, err: "(unsigned 0..255)"},
		{word: "-0", bits: 8, want: 0},
		{word: "-128", bits: 8, signed: true, want: 0x80},
		{word: "-129", bits: 8, signed: true, err: "(signed -128..127)"},
		{word: "128", bits: 8, signed: true, err: "(signed -128..127)"},
		{word: "-1", bits: 4, either: true, want: 0xf},
		{word: "15", bits: 4, either: true, want: 15},
		{word: "16", bits: 4, either: true, err: "(-8..15)"},
		{word: "18446744073709551615", bits: 64, want: ^uint64(0)},
		{word: "18446744073709551616", bits: 64, err: "(unsigned 0..18446744073709551615)"},
		{word: "0x10000000000000000", bits: 64, either: true, err: "(-9223372036854775808..18446744073709551615)"},
		{word: "-9223372036854775808", bits: 64, signed: true, want: 1 << 63},
		{word: "-9223372036854775809", bits: 64, signed: true, err: "(signed -9223372036854775808..9223372036854775807)"},
		{word: "-1", bits: 64, signed: true, want: ^uint64(0)},
		{word: "1_000", bits: 32, err: "is not an integer"},
		{word: "+1", bits: 32, err: "is not an integer"},
		{word: "--1", bits: 32, err: "is not an integer"},
		{word: "0x", bits: 32, err: "is not an integer"},
		{word: "010", bits: 32, want: 10},
		{word: "12a", bits: 32, err: "is not an integer"},
	} {
		got, err := parseIntRange(c.word, c.bits, c.signed, c.either, "x", "w")
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q in %d bits: %v, %v; want an error with %q", c.word, c.bits, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q in %d bits: %#x, %v; want %#x", c.word, c.bits, got, err, c.want)
		}
	}
	for w, ok := range map[string]bool{"0": true, "-0": true, "0xffffffffffffffff": true, "-1": false, "0x1ffffffffffffffff": false, "x": false} {
		if _, err := parseUint(w); (err == nil) != ok {
			t.Errorf("parseUint(%q): %v", w, err)
		}
	}
}
