package wire

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger/internal/codecgen"
	json "github.com/goccy/go-json"
)

// TestCodecGenerated: codec_gen.go is what go generate writes from the
// wire types as they are now.
func TestCodecGenerated(t *testing.T) {
	want, err := codecgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("codec_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("codec_gen.go is stale: run go generate ./ledger/internal/wire")
	}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fill sets every field of the struct v, embedded ones included, to a
// value that is not its zero value and that the JSON encoder writes: a
// field the codec leaves out does not come back.
func fill(v reflect.Value, n int) {
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			fillValue(v.Field(i), 10*n+i)
		}
	}
}

func fillValue(f reflect.Value, n int) {
	switch f.Type() {
	case timeType:
		f.Set(reflect.ValueOf(t0.Add(time.Duration(n)*time.Hour + time.Duration(n)*time.Microsecond)))
		return
	case rawType:
		f.SetBytes([]byte(fmt.Sprintf(`{"n":[%d,"x"]}`, n)))
		return
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(fmt.Sprintf("s%d \"é\"\n", n))
	case reflect.Int, reflect.Int64:
		f.SetInt(int64(n + 1))
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		fillValue(p.Elem(), n)
		f.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 2, 2)
		for k := range 2 {
			fillValue(s.Index(k), n+k+1)
		}
		f.Set(s)
	case reflect.Struct:
		fill(f, n)
	default:
		panic(fmt.Sprintf("fill: no value for a %s", f.Type()))
	}
}

// TestSchemaRoundTrip: every field of every wire type, each set, is written
// by the codec as the JSON encoder writes it and read back as it was, for
// events of every op. A field missing from the codec fails here.
func TestSchemaRoundTrip(t *testing.T) {
	for _, op := range Ops {
		var e Event
		fill(reflect.ValueOf(&e).Elem(), 1)
		e.Op = op
		want, err := json.MarshalWithOption(&e, json.DisableHTMLEscape())
		if err != nil {
			t.Fatal(err)
		}
		line, err := EncodeLine(&e)
		if err != nil || !bytes.Equal(line, frame(string(want))) {
			t.Fatalf("%s: EncodeLine = %q, %v; want %q", op, line, err, frame(string(want)))
		}
		got, ok := decodeFast(bytes.TrimSuffix(line, []byte{'\n'}))
		if !ok || !reflect.DeepEqual(got, &e) {
			t.Fatalf("%s: decodeFast (ok %v) gave\n%+v\nwant\n%+v", op, ok, got, &e)
		}
	}
	var c Card
	fill(reflect.ValueOf(&c).Elem(), 2)
	var r Keyed
	fill(reflect.ValueOf(&r).Elem(), 3)
	var k Conflict
	fill(reflect.ValueOf(&k).Elem(), 4)
	for _, l := range []SnapshotLine{{Card: &c}, {Receipt: &r}, {Conflict: &k}} {
		want, err := json.MarshalWithOption(l, json.DisableHTMLEscape())
		if err != nil {
			t.Fatal(err)
		}
		line, err := EncodeFramed(l)
		if err != nil || !bytes.Equal(line, frame(string(want))) {
			t.Fatalf("snapshot line = %q, %v; want %q", line, err, frame(string(want)))
		}
		got, ok := DecodeSnapshotFast(bytes.TrimSuffix(line, []byte{'\n'}))
		if !ok || !reflect.DeepEqual(got, l) {
			t.Fatalf("decodeSnapshotFast (ok %v) gave\n%s\nwant\n%s", ok, DumpSnapshotLine(got), DumpSnapshotLine(l))
		}
	}
	var h SnapshotHeader
	fill(reflect.ValueOf(&h).Elem(), 5)
	want, err := json.MarshalWithOption(h, json.DisableHTMLEscape())
	if err != nil {
		t.Fatal(err)
	}
	line, err := EncodeFramed(h)
	if err != nil || !bytes.Equal(line, frame(string(want))) {
		t.Fatalf("header = %q, %v; want %q", line, err, frame(string(want)))
	}
	got, fast := decodeHeaderFast(line[:len(line)-1])
	if !fast {
		t.Fatalf("the header decoder declined %q", line)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("header decoded as %+v, want %+v", got, h)
	}
}

// TestCloneAndSameFields: clone copies every field and shares no slice
// or pointer but times; sameFields sees a change to each field an update
// sets (a Fields pointer member) and to no other.
func TestCloneAndSameFields(t *testing.T) {
	var c Card
	fill(reflect.ValueOf(&c).Elem(), 6)
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("clone gave\n%+v\nwant\n%+v", d, c)
	}
	d.Labels[0], d.DependsOn[0], d.Acceptance[0], d.Checkpoint[0], *d.Progress, d.Notes[0].Text = "x", "x", "x", 'x', -1, "x"
	var again Card
	fill(reflect.ValueOf(&again).Elem(), 6)
	if !reflect.DeepEqual(c, again) {
		t.Fatal("a change to the clone reached the card")
	}
	updatable := map[string]bool{}
	ft := reflect.TypeFor[Fields]()
	for i := range ft.NumField() {
		if ft.Field(i).Type.Kind() == reflect.Pointer {
			updatable[jsonName(ft.Field(i))] = true
		}
	}
	ct := reflect.TypeFor[Card]()
	for i := range ct.NumField() {
		d := c.Clone()
		fillValue(reflect.ValueOf(&d).Elem().Field(i), 99)
		if got := !c.SameFields(&d); got != updatable[jsonName(ct.Field(i))] {
			t.Errorf("a change to Card.%s: sameFields saw it %v, want %v", ct.Field(i).Name, got, !got)
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
	return string(name)
}

// TestOpInfo: every op of the format says what it did (Op.Done) and the
// version that reads it, and no version is newer than the format's.
func TestOpInfo(t *testing.T) {
	for _, op := range Ops {
		info, ok := opInfo[op]
		switch {
		case !ok:
			t.Errorf("op %s has no row in opInfo (schema.go)", op)
		case info.done == "":
			t.Errorf("op %s says nothing for Done", op)
		case info.since < 1 || info.since > FormatVersion:
			t.Errorf("op %s is read from version %d, outside 1..%d", op, info.since, FormatVersion)
		}
	}
	if len(opInfo) != len(Ops) {
		t.Errorf("opInfo has %d rows for %d ops", len(opInfo), len(Ops))
	}
}
