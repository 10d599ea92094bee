package cli

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	var ue *UsageError
	err := fmt.Errorf("run: %w", Usagef("--repeat %d: want at least 1", 0))
	if !errors.As(err, &ue) || err.Error() != "run: --repeat 0: want at least 1" {
		t.Errorf("Usagef through a wrap: %v, usage %v", err, errors.As(err, &ue))
	}
	if err := AsUsage(errors.New("--mem: not hex")); !errors.As(err, &ue) {
		t.Errorf("AsUsage of a value error: %T, want a UsageError", err)
	}
	if err := AsUsage(errors.New("BUG: default n_bytes")); errors.As(err, &ue) {
		t.Errorf("AsUsage of an internal error made it a usage error")
	}
	if u := Usagef("x"); AsUsage(u) != u {
		t.Errorf("AsUsage wrapped a usage error again")
	}
}

func TestSplitVars(t *testing.T) {
	got := SplitVars([]string{"a=1, b=2", "", " c=3 ,"})
	if want := []string{"a=1", "b=2", "c=3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SplitVars = %q, want %q", got, want)
	}
}

func TestWriteJSONKeepsHTMLCharacters(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]string{"object": "a<b>&c.o"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"object\": \"a<b>&c.o\"\n}\n"; b.String() != want {
		t.Errorf("WriteJSON = %q, want %q", b.String(), want)
	}
}
