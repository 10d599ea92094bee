package maps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WriteJSON writes d as one JSON object and a newline: integers exact
// (never through a float), struct fields in their order, and no HTML
// escaping of strings.
func (d *MapDump) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}

// DecodeDump reads the JSON form of a MapDump (json.Marshal or WriteJSON)
// back, exactly: integers become json.Number with all their digits, JSON
// objects Struct (fields in order), arrays []any, and the values of a
// per-CPU map PerCPU. Strings stay strings: the JSON form does not say
// whether one was text, an enum name or hex bytes.
func DecodeDump(data []byte) (*MapDump, error) {
	var raw struct {
		MapDump
		Entries []struct {
			Key   json.RawMessage `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("map dump: %w", err)
	}
	d := raw.MapDump
	d.Entries = make([]Entry, 0, len(raw.Entries))
	for i, re := range raw.Entries {
		var e Entry
		var err error
		if e.Key, err = decodeJSONValue(re.Key); err != nil {
			return nil, fmt.Errorf("map dump %s: entry %d: key: %w", d.Name, i, err)
		}
		if e.Value, err = decodeJSONValue(re.Value); err != nil {
			return nil, fmt.Errorf("map dump %s: entry %d: value: %w", d.Name, i, err)
		}
		if d.Type == PerCPUArray.String() {
			if e.Value, err = perCPUFromJSON(e.Value); err != nil {
				return nil, fmt.Errorf("map dump %s: entry %d: value: %w", d.Name, i, err)
			}
		}
		d.Entries = append(d.Entries, e)
	}
	return &d, nil
}

func decodeJSONValue(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeJSONToken(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func decodeJSONToken(dec *json.Decoder, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("value nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			s := Struct{}
			for dec.More() {
				nt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				name, _ := nt.(string)
				v, err := decodeJSONToken(dec, depth+1)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				s = append(s, Field{name, v})
			}
			_, err := dec.Token() // '}'
			return s, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeJSONToken(dec, depth+1)
				if err != nil {
					return nil, fmt.Errorf("[%d]: %w", len(a), err)
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	}
	return tok, nil // json.Number, string, bool or nil
}

// perCPUFromJSON turns [{"slot": N, "value": V}, ...] into PerCPU.
func perCPUFromJSON(v any) (any, error) {
	if v == nil {
		return PerCPU(nil), nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, errors.New("per-CPU value is not a list of slots")
	}
	out := make(PerCPU, 0, len(a))
	for _, x := range a {
		s, ok := x.(Struct)
		if !ok || len(s) != 2 || s[0].Name != "slot" || s[1].Name != "value" {
			return nil, errors.New(`per-CPU slot is not {"slot": N, "value": V}`)
		}
		n, ok := s[0].Value.(json.Number)
		if !ok {
			return nil, errors.New("per-CPU slot number is not an integer")
		}
		slot, err := n.Int64()
		if err != nil {
			return nil, fmt.Errorf("per-CPU slot %s: %w", n, err)
		}
		out = append(out, SlotValue{int(slot), s[1].Value})
	}
	return out, nil
}
