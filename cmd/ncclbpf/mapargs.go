package main

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// updateSyntax describes what parseUpdateArgs reads, for map update --help.
const updateSyntax = `KEY and VALUE are integers, encoded little-endian to the map's key or
value size: decimal (42, -1) or hex with 0x (0x2a); a negative number is
stored as two's complement and must fit the size as a signed integer. For
a struct or any other layout, give the bytes as bpftool does:
  key hex 01 00 00 00 value hex 2a 00 00 00 00 00 00 00
  key 1 0 0 0 value 42 0 0 0 0 0 0 0       (bytes in decimal)
"key N value N" is the integer form spelled out.`

// parseUpdateArgs reads the KEY and VALUE of map update (the words after
// MAP) for a map with keys and values of the given sizes.
func parseUpdateArgs(words []string, keySize, valueSize uint32) (key, value []byte, err error) {
	if len(words) == 2 && words[0] != "key" {
		if key, err = parseMapWords("key", words[:1], false, keySize); err != nil {
			return nil, nil, err
		}
		value, err = parseMapWords("value", words[1:], false, valueSize)
		return key, value, err
	}
	if len(words) < 4 || words[0] != "key" {
		return nil, nil, fmt.Errorf("want KEY VALUE, or key [hex] BYTES... value [hex] BYTES...; got %q", strings.Join(words, " "))
	}
	vi := -1
	for i, w := range words {
		if w == "value" {
			vi = i
			break
		}
	}
	if vi < 0 {
		return nil, nil, fmt.Errorf("%q: no \"value\" word after the key bytes", strings.Join(words, " "))
	}
	kw, vw := words[1:vi], words[vi+1:]
	kHex, vHex := len(kw) > 0 && kw[0] == "hex", len(vw) > 0 && vw[0] == "hex"
	if kHex {
		kw = kw[1:]
	}
	if vHex {
		vw = vw[1:]
	}
	if key, err = parseMapWords("key", kw, kHex, keySize); err != nil {
		return nil, nil, err
	}
	value, err = parseMapWords("value", vw, vHex, valueSize)
	return key, value, err
}

// parseMapWords reads one key or value: hex bytes (isHex), one integer, or
// several decimal bytes.
func parseMapWords(what string, words []string, isHex bool, size uint32) ([]byte, error) {
	if len(words) == 0 {
		return nil, fmt.Errorf("%s: no bytes given", what)
	}
	var b []byte
	switch {
	case isHex:
		for _, w := range words {
			d, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(w), "0x"))
			if err != nil {
				return nil, fmt.Errorf("%s hex %q: want hex bytes such as 01 00 00 00", what, w)
			}
			b = append(b, d...)
		}
	case len(words) == 1:
		return encodeInt(what, words[0], size)
	default:
		for _, w := range words {
			n, err := strconv.ParseUint(w, 0, 8)
			if err != nil {
				return nil, fmt.Errorf("%s byte %q: want 0..255 (or write \"%s hex ...\" for hex bytes)", what, w, what)
			}
			b = append(b, byte(n))
		}
	}
	if uint32(len(b)) != size {
		return nil, fmt.Errorf("%s: %d bytes given, the map's %s size is %d", what, len(b), what, size)
	}
	return b, nil
}

// encodeInt encodes an integer little-endian to size bytes, refusing one
// that does not fit.
func encodeInt(what, s string, size uint32) ([]byte, error) {
	n, ok := new(big.Int).SetString(s, 0)
	if !ok || strings.HasPrefix(s, "0") && len(s) > 1 && !strings.HasPrefix(strings.ToLower(s), "0x") {
		return nil, fmt.Errorf("%s %q: want an integer (42, -1, 0x2a), or bytes: %s hex 01 00 ...", what, s, what)
	}
	bits := uint(size) * 8
	if size == 0 || size > 64 {
		return nil, fmt.Errorf("%s %q: the map's %s is %d bytes: give them as %s hex BYTES...", what, s, what, size, what)
	}
	lo := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), bits-1)) // -2^(bits-1)
	hi := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits), big.NewInt(1))
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return nil, fmt.Errorf("%s %s does not fit in %d bytes (%s..%s)", what, s, size, lo, hi)
	}
	if n.Sign() < 0 {
		n.Add(n, new(big.Int).Lsh(big.NewInt(1), bits)) // two's complement
	}
	be := n.FillBytes(make([]byte, size))
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be, nil
}
