package codecgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// kind classifies a field's Go type.
type kind int

const (
	kString kind = iota
	kEnum
	kInt
	kInt64
	kBool
	kTime
	kTimePtr
	kIntPtr
	kStringPtr
	kStringsPtr
	kStrings
	kRaw
	kObjectPtr
	kObjectList
)

func kindOf(typ string) (kind, string, bool) {
	switch typ {
	case "string":
		return kString, "", true
	case "int":
		return kInt, "", true
	case "int64":
		return kInt64, "", true
	case "bool":
		return kBool, "", true
	case "time.Time":
		return kTime, "", true
	case "*time.Time":
		return kTimePtr, "", true
	case "*int":
		return kIntPtr, "", true
	case "*string":
		return kStringPtr, "", true
	case "*[]string":
		return kStringsPtr, "", true
	case "[]string":
		return kStrings, "", true
	case "json.RawMessage":
		return kRaw, "", true
	}
	for _, e := range Enums {
		if typ == e.Type {
			return kEnum, strings.ToLower(typ), true
		}
	}
	if o, ok := objectOf(strings.TrimPrefix(typ, "*")); ok && strings.HasPrefix(typ, "*") {
		return kObjectPtr, o.Short, true
	}
	if o, ok := objectOf(strings.TrimPrefix(typ, "[]")); ok && strings.HasPrefix(typ, "[]") {
		return kObjectList, o.Short, true
	}
	return 0, "", false
}

// slot is the name of a pointer field's value in its object's block.
func slot(f field) string { return strings.ReplaceAll(f.Go, ".", "") }

// hasBlock reports whether an object's decoder allocates a block for the
// values its pointer fields point to (all but times, which are allocated
// together once read).
func hasBlock(fs []field) bool {
	for _, f := range fs {
		if k, _, _ := kindOf(f.Type); k == kIntPtr || k == kStringPtr || k == kStringsPtr {
			return true
		}
	}
	return false
}

func timePtrs(fs []field) int {
	n := 0
	for _, f := range fs {
		if k, _, _ := kindOf(f.Type); k == kTimePtr {
			n++
		}
	}
	return n
}

// fixedSize is at least the length of an object's member names and of
// its numbers, booleans and times, and of its punctuation.
func fixedSize(fs []field) int {
	n := 2
	for _, f := range fs {
		n += len(f.JSON) + 4
		switch k, _, _ := kindOf(f.Type); k {
		case kInt, kInt64, kIntPtr:
			n += 20
		case kBool:
			n += 5
		case kTime, kTimePtr:
			n += 40
		}
	}
	return n
}

func (w *writer) object(s *schema, o Object) error {
	fs := s.fields[o.Name]
	for _, f := range fs {
		k, _, ok := kindOf(f.Type)
		if !ok {
			return fmt.Errorf("codecgen: %s.%s: unsupported type %s", o.Name, f.Go, f.Type)
		}
		switch k {
		case kTimePtr, kIntPtr, kStringPtr, kStringsPtr, kRaw, kObjectPtr, kObjectList:
			if !f.Omit {
				return fmt.Errorf("codecgen: %s.%s: a %s field must be omitempty", o.Name, f.Go, f.Type)
			}
		case kTime:
			if f.Omit {
				return fmt.Errorf("codecgen: %s.%s: a time.Time field cannot be omitempty", o.Name, f.Go)
			}
		}
	}
	w.encoder(o, fs)
	w.decoder(s, o, fs)
	w.sizes(o, fs)
	return nil
}

func (w *writer) encoder(o Object, fs []field) {
	fn := "append" + title(o.Short)
	w.p("\n// %s appends v as the JSON encoder writes a %s, compact. ok is false\n// for a value it leaves to the JSON encoder; dst is then as it was.\n", fn, o.Name)
	w.p("func %s(dst []byte, v *%s) (_ []byte, ok bool) {\nopen := len(dst)\n", fn, o.Name)
	w.p("// Each member is written after a comma; the first comma becomes the brace.\n")
	for _, f := range fs {
		k, short, _ := kindOf(f.Type)
		key := strconv.Quote(`,"` + f.JSON + `":`)
		val := "v." + f.Go
		put := fmt.Sprintf("dst = append(dst, %s...)\n", key)
		decline := "{\nreturn dst[:open], false\n}\n"
		switch k {
		case kString, kEnum:
			body := put + fmt.Sprintf("dst = appendString(dst, string(%s))\n", val)
			if k == kString {
				body = put + fmt.Sprintf("dst = appendString(dst, %s)\n", val)
			}
			w.opt(f.Omit, val+` != ""`, body)
		case kInt, kInt64:
			w.opt(f.Omit, val+" != 0", put+fmt.Sprintf("dst = appendInt(dst, int64(%s))\n", val))
		case kBool:
			if f.Omit {
				w.p("if %s {\ndst = append(dst, %s...)\n}\n", val, strconv.Quote(`,"`+f.JSON+`":true`))
			} else {
				w.p("%sif %s {\ndst = append(dst, \"true\"...)\n} else {\ndst = append(dst, \"false\"...)\n}\n", put, val)
			}
		case kTime:
			w.p("%sif dst, ok = appendTime(dst, %s); !ok %s", put, val, decline)
		case kTimePtr:
			w.p("if %s != nil {\n%sif dst, ok = appendTime(dst, *%s); !ok %s}\n", val, put, val, decline)
		case kIntPtr:
			w.p("if %s != nil {\n%sdst = appendInt(dst, int64(*%s))\n}\n", val, put, val)
		case kStringPtr:
			w.p("if %s != nil {\n%sdst = appendString(dst, *%s)\n}\n", val, put, val)
		case kStringsPtr:
			w.p("if %s != nil {\n%sdst = appendStrings(dst, *%s)\n}\n", val, put, val)
		case kStrings:
			w.opt(f.Omit, "len("+val+") != 0", put+fmt.Sprintf("dst = appendStrings(dst, %s)\n", val))
		case kRaw:
			w.p("if len(%s) != 0 {\n%sif dst, ok = appendRaw(dst, %s); !ok %s}\n", val, put, val, decline)
		case kObjectPtr:
			w.p("if %s != nil {\n%sif dst, ok = append%s(dst, %s); !ok %s}\n", val, put, title(short), val, decline)
		case kObjectList:
			w.p("if len(%s) != 0 {\n%sdst = append(dst, '[')\nfor k := range %s {\nif k > 0 {\ndst = append(dst, ',')\n}\nif dst, ok = append%s(dst, &%s[k]); !ok %s}\ndst = append(dst, ']')\n}\n",
				val, put, val, title(short), val, decline)
		}
	}
	w.p("if len(dst) == open {\nreturn append(dst, '{', '}'), true\n}\ndst[open] = '{'\nreturn append(dst, '}'), true\n}\n")
}

func (w *writer) opt(omit bool, cond, body string) {
	if omit {
		w.p("if %s {\n%s}\n", cond, body)
	} else {
		w.p("%s", body)
	}
}

func (w *writer) decoder(s *schema, o Object, fs []field) {
	params, args := w.block(o, fs)
	w.p("\n// %sObject reads a %s object at b[i:].\nfunc (d *fastDecoder) %sObject(i int, %s) int {\nreturn closeObject(d.b, d.%sMembers(i, %s), i)\n}\n",
		o.Short, o.Name, o.Short, params, o.Short, args)
	w.p("\n// %sMembers reads the '{' at b[i:] and the members of a %s after it, in\n// struct order, each at most once, those without omitempty required; it\n// returns the index after the last.\n", o.Short, o.Name)
	// When the first member is always there, each member's name is read
	// with what comes before it, the brace or a comma, in one literal;
	// else sep reads that.
	firstRequired := !fs[0].Omit
	if firstRequired {
		w.p("func (d *fastDecoder) %sMembers(i int, %s) int {\nb := d.b\n", o.Short, params)
	} else {
		w.p("func (d *fastDecoder) %sMembers(i int, %s) int {\nb, open := d.b, i\nif i < 0 || i >= len(b) || b[i] != '{' {\nreturn -1\n}\n", o.Short, params)
	}
	// Two or more optional times are gathered as they are read and
	// allocated together; one takes an allocation of its own when there.
	nt := timePtrs(fs)
	if nt > 1 {
		w.p("var tv [%d]time.Time\nvar tp [%d]**time.Time\nnt := 0\n", nt, nt)
	}
	for n, f := range fs {
		k, short, _ := kindOf(f.Type)
		at := keyLit(`"`+f.JSON+`":`, "sep(b, i, open)")
		if firstRequired {
			at = keyLit(`,"`+f.JSON+`":`, "i")
			if n == 0 {
				at = keyLit(`{"`+f.JSON+`":`, "i")
			}
		}
		val := "v." + f.Go
		read := readCode(s, f, k, short, val, nt)
		switch {
		case k == kRaw:
			w.p("// A null %s is left to the JSON decoder.\nif j := %s; j >= 0 && j < len(b) && b[j] != 'n' {\nif i = skipValue(b, j); i >= 0 {\n%s = append([]byte(nil), b[j:i]...)\n}\n}\n",
				f.JSON, at, val)
		case f.Omit:
			w.p("if j := %s; j >= 0 {\n%s\n}\n", at, strings.ReplaceAll(read, "@@", "j"))
		default:
			w.p("%s\n", strings.ReplaceAll(read, "@@", at))
		}
	}
	if nt > 1 {
		w.p("if i >= 0 {\nplaceTimes(tv[:nt], tp[:nt])\n}\n")
	}
	w.p("return i\n}\n")
	if s.listed(o.Name) {
		w.listDecoder(o, fs)
	}
}

// block writes o's Block type when o has pointers to values other than
// times, and returns the decoder's parameters and the arguments that pass
// them on.
func (w *writer) block(o Object, fs []field) (params, args string) {
	if !hasBlock(fs) {
		return fmt.Sprintf("v *%s", o.Name), "v"
	}
	w.p("\n// %sBlock holds a %s and the values its pointers point to, times\n// aside, in one allocation.\ntype %sBlock struct {\nv %s\n", o.Short, o.Name, o.Short, o.Name)
	for _, f := range fs {
		switch k, _, _ := kindOf(f.Type); k {
		case kIntPtr, kStringPtr, kStringsPtr:
			w.p("%s %s\n", slot(f), strings.TrimPrefix(f.Type, "*"))
		}
	}
	w.p("}\n")
	return fmt.Sprintf("v *%s, blk *%sBlock", o.Name, o.Short), "v, blk"
}

// readCode is the statement that reads field f (of kind k) into val, with
// @@ where the index of its value goes; nt is the object's count of
// optional times (one is allocated alone, more together).
func readCode(s *schema, f field, k kind, short, val string, nt int) string {
	var read string
	switch k {
	case kString:
		read = fmt.Sprintf("i = d.str(@@, &%s)", val)
	case kEnum:
		read = fmt.Sprintf("i = d.%sValue(@@, &%s)", short, val)
	case kInt:
		read = fmt.Sprintf("%s, i = ScanInt(b, @@)", val)
	case kInt64:
		read = fmt.Sprintf("%s, i = ScanInt64(b, @@)", val)
	case kBool:
		read = fmt.Sprintf("%s, i = scanBool(b, @@)", val)
	case kTime:
		read = fmt.Sprintf("%s, i = ScanTime(b, @@)", val)
	case kTimePtr:
		read = fmt.Sprintf("tv[nt], i = ScanTime(b, @@)\ntp[nt] = &%s\nnt++", val)
		if nt == 1 {
			read = fmt.Sprintf("t := new(time.Time)\n*t, i = ScanTime(b, @@)\n%s = t", val)
		}
	case kIntPtr:
		read = fmt.Sprintf("blk.%s, i = ScanInt(b, @@)\n%s = &blk.%s", slot(f), val, slot(f))
	case kStringPtr:
		read = fmt.Sprintf("i = d.str(@@, &blk.%s)\n%s = &blk.%s", slot(f), val, slot(f))
	case kStringsPtr:
		read = fmt.Sprintf("blk.%s, i = d.strs(@@)\n%s = &blk.%s", slot(f), val, slot(f))
	case kStrings:
		read = fmt.Sprintf("%s, i = d.strs(@@)", val)
	case kObjectPtr:
		inner := strings.TrimPrefix(f.Type, "*")
		if hasBlock(s.fields[inner]) {
			read = fmt.Sprintf("ib := new(%sBlock)\ni = d.%sObject(@@, &ib.v, ib)\n%s = &ib.v", short, short, val)
		} else {
			read = fmt.Sprintf("iv := new(%s)\ni = d.%sObject(@@, iv)\n%s = iv", inner, short, val)
		}
	case kObjectList:
		read = fmt.Sprintf("%s, i = d.%sList(@@)", val, short)
	}
	return read
}

// listDecoder writes the reader of a list of o, for an object a list
// holds.
func (w *writer) listDecoder(o Object, fs []field) {
	if hasBlock(fs) || len(fs) == 0 || fs[0].Omit {
		panic(fmt.Sprintf("codecgen: %s in a list needs a required first member and no block", o.Name))
	}
	first := strconv.Quote(`{"` + fs[0].JSON + `":`)
	w.p("\n// %sList reads a list of %s; [] is an empty, non-nil slice. Every\n// element starts with %s, which a string cannot hold (its quotes would\n// be escaped): the count bounds the list, whose strings must not move\n// before finish.\n", o.Short, o.Name, first)
	w.p("func (d *fastDecoder) %sList(i int) ([]%s, int) {\nb := d.b\nif i = lit(b, i, \"[\"); i < 0 {\nreturn nil, -1\n}\nif j := lit(b, i, \"]\"); j >= 0 {\nreturn []%s{}, j\n}\n", o.Short, o.Name, o.Name)
	w.p("list := make([]%s, 0, bytes.Count(b[i:], []byte(%s)))\nfor len(list) < cap(list) {\nlist = append(list, %s{})\nif i = d.%sObject(i, &list[len(list)-1]); i < 0 || i >= len(b) {\nreturn nil, -1\n}\n", o.Name, first, o.Name, o.Short)
	w.p("if b[i] == ']' {\nreturn list, i + 1\n}\nif b[i] != ',' {\nreturn nil, -1\n}\ni++\n}\nreturn nil, -1\n}\n")
}

// listed reports whether some wire type holds a list of typ.
func (s *schema) listed(typ string) bool {
	for _, o := range Objects {
		for _, f := range s.fields[o.Name] {
			if f.Type == "[]"+typ {
				return true
			}
		}
	}
	return false
}

func (w *writer) sizes(o Object, fs []field) {
	w.p("\n// %sSize estimates the length of v's JSON, for the buffer it is written\n// into: the names, typical numbers, times and the strings.\nfunc %sSize(v *%s) int {\nn := 2\n", o.Short, o.Short, o.Name)
	for _, f := range fs {
		k, short, _ := kindOf(f.Type)
		val := "v." + f.Go
		size := len(f.JSON) + 4
		var cond, dyn string
		switch k {
		case kString, kEnum:
			size += 2
			cond, dyn = val+` != ""`, "len("+val+")"
		case kInt, kInt64:
			size += 3 // most are small: versions, epochs, counts
			cond = val + " != 0"
		case kBool:
			size += 5
			cond = val
		case kTime:
			size += 32
		case kTimePtr:
			size += 32
			cond = val + " != nil"
		case kIntPtr:
			size += 3
			cond = val + " != nil"
		case kStringPtr:
			size += 2
			cond, dyn = val+" != nil", "len(*"+val+")"
		case kStrings:
			cond, dyn = "len("+val+") != 0", "stringsSize("+val+")"
		case kStringsPtr:
			cond, dyn = val+" != nil", "stringsSize(*"+val+")"
		case kRaw:
			cond, dyn = "len("+val+") != 0", "len("+val+")"
		case kObjectPtr:
			cond, dyn = val+" != nil", short+"Size("+val+")"
		case kObjectList:
			cond = "len(" + val + ") != 0"
			dyn = fmt.Sprintf("func() (n int) {\nfor k := range %s {\nn += %sSize(&%s[k]) + 1\n}\nreturn n\n}()", val, short, val)
		}
		add := fmt.Sprintf("n += %d", size)
		if dyn != "" {
			add += " + " + dyn
		}
		if f.Omit {
			w.p("if %s {\n%s\n}\n", cond, add)
		} else {
			w.p("%s\n", add)
		}
	}
	w.p("return n\n}\n")
	w.bound(o, fs)
}

// bound writes o's Bound: at least the length of its compact JSON, for
// a buffer that must not grow.
func (w *writer) bound(o Object, fs []field) {
	w.p("\n// %sBound is at least the length of v's compact JSON, its strings\n// measured by strLen. Zero for nil.\nfunc %sBound(v *%s, strLen func(string) int) int {\nif v == nil {\nreturn 0\n}\nn := %d\n", o.Short, o.Short, o.Name, 2*fixedSize(fs)+256)
	for _, f := range fs {
		k, short, _ := kindOf(f.Type)
		val := "v." + f.Go
		switch k {
		case kString:
			w.p("n += strLen(%s)\n", val)
		case kEnum:
			w.p("n += strLen(string(%s))\n", val)
		case kRaw:
			w.p("n += 6 * len(%s)\n", val)
		case kStringPtr:
			w.p("if %s != nil {\nn += strLen(*%s)\n}\n", val, val)
		case kStrings:
			w.p("n += listBound(%s, strLen)\n", val)
		case kStringsPtr:
			w.p("if %s != nil {\nn += listBound(*%s, strLen)\n}\n", val, val)
		case kObjectPtr:
			w.p("n += %sBound(%s, strLen)\n", short, val)
		case kObjectList:
			w.p("for k := range %s {\nn += %sBound(&%s[k], strLen)\n}\n", val, short, val)
		}
	}
	w.p("return n\n}\n")
}

// card writes Card's deep copy and the comparison of the fields an update
// sets: the Card fields named as Fields' pointer members.
func (w *writer) card(s *schema) error {
	w.p("\n// Clone returns a deep copy, so callers never share slices with the\n// state. Times are shared: nothing changes a time through its pointer.\nfunc (c *Card) Clone() Card {\nd := *c\n")
	for _, f := range s.fields["Card"] {
		k, _, _ := kindOf(f.Type)
		switch k {
		case kStrings:
			w.p("d.%s = CloneStrings(c.%s)\n", f.Go, f.Go)
		case kRaw, kObjectList:
			w.p("d.%s = slices.Clone(c.%s)\n", f.Go, f.Go)
		case kIntPtr, kObjectPtr: // a pointer to a value without pointers
			w.p("if c.%s != nil {\np := *c.%s\nd.%s = &p\n}\n", f.Go, f.Go, f.Go)
		case kTimePtr, kString, kEnum, kInt, kInt64, kBool, kTime:
		default:
			return fmt.Errorf("codecgen: Card.%s: no deep copy for %s", f.Go, f.Type)
		}
	}
	w.p("return d\n}\n")
	w.p("\n// SameFields reports whether the fields an update can set (Fields'\n// pointer members) are equal.\nfunc (c *Card) SameFields(d *Card) bool {\nreturn true")
	for _, u := range s.fields["Fields"] {
		if !strings.HasPrefix(u.Type, "*") {
			continue
		}
		i := slices.IndexFunc(s.fields["Card"], func(f field) bool { return f.JSON == u.JSON })
		if i < 0 {
			return fmt.Errorf("codecgen: Fields.%s sets %q, which Card does not have", u.Go, u.JSON)
		}
		f := s.fields["Card"][i]
		switch k, _, _ := kindOf(f.Type); k {
		case kStrings:
			w.p(" &&\nslices.Equal(c.%s, d.%s)", f.Go, f.Go)
		case kTimePtr:
			w.p(" &&\n(c.%s == nil) == (d.%s == nil) && (c.%s == nil || c.%s.Equal(*d.%s))", f.Go, f.Go, f.Go, f.Go, f.Go)
		case kString, kEnum, kInt, kInt64, kBool:
			w.p(" &&\nc.%s == d.%s", f.Go, f.Go)
		default:
			return fmt.Errorf("codecgen: Card.%s: no comparison for %s", f.Go, f.Type)
		}
	}
	w.p("\n}\n")
	return nil
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
