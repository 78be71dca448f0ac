// Package argcheck words the errors of tool-argument validation for the
// people and models who read them.
//
// Hangar validates a tool's arguments against its input schema with
// github.com/google/jsonschema-go, whose errors are written for the schema's
// author: "validating root: validating /properties/count: maximum: 500/1 is
// greater than 100.000000", or `type: 2 has type "string", want "integer"`.
// [Message] says the same in terms of the arguments: "count: 500 is above
// the maximum 100", `count: expected an integer, got the string "2"`.
//
// The validator's errors are plain text, wrapped once per subschema it
// entered ("validating <location>: ..."), with the keyword that failed
// innermost. Message follows the locations through the schema and the
// arguments to the value at fault, and words the keyword with the value
// and the schema's own bound. An error it cannot follow is returned with
// the validator's locations left out.
package argcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Message returns what to tell the caller about err, the error of
// validating args (tool arguments decoded by encoding/json into any)
// against the resolved input schema rs. A nil rs words the error from its
// text alone.
func Message(rs *jsonschema.Resolved, args any, err error) string {
	if err == nil {
		return ""
	}
	locs, leaf := split(err)
	keyword, detail, _ := strings.Cut(leaf, ": ")
	if strings.HasPrefix(leaf, "unexpected additional properties ") {
		keyword, detail = "additionalProperties", strings.TrimPrefix(leaf, "unexpected additional properties ")
	}
	var root *jsonschema.Schema
	if rs != nil {
		root = rs.Schema()
	}
	f, ok := follow(root, args, locs, keyword)
	if !ok {
		f = found{path: pathOf(locs), value: args, known: false}
	}
	msg := word(f, keyword, detail)
	if msg == "" {
		msg = leaf
	}
	if f.path != "" {
		return f.path + ": " + msg
	}
	return msg
}

// split returns the locations of the subschemas the validator entered,
// outermost first ("root", "/properties/count"), and the innermost message.
func split(err error) (locs []string, leaf string) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		inner := errors.Unwrap(e)
		if inner == nil {
			return locs, e.Error()
		}
		prefix, ok := strings.CutSuffix(e.Error(), ": "+inner.Error())
		loc, isLoc := strings.CutPrefix(prefix, "validating ")
		if !ok || !isLoc {
			return locs, e.Error()
		}
		locs = append(locs, loc)
	}
	return locs, ""
}

// pathOf is the path of the value that the last of locs validates, as far
// as the locations tell without the schema: its properties.
func pathOf(locs []string) string {
	if len(locs) == 0 {
		return ""
	}
	path := ""
	segs := pointer(strings.TrimPrefix(locs[len(locs)-1], "/"))
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				path = join(path, segs[i+1])
				i++
			}
		case "items", "additionalProperties":
			path += "[?]"
		case "prefixItems":
			if i+1 < len(segs) {
				path += "[" + segs[i+1] + "]"
				i++
			}
		case "$defs", "definitions", "anyOf", "oneOf", "allOf", "patternProperties", "dependentSchemas":
			i++
		}
	}
	return path
}

// found is where a validation error points: the path of the value in the
// arguments ("" for the arguments themselves), the value, and the schema
// that refused it.
type found struct {
	path   string
	value  any
	schema *jsonschema.Schema
	known  bool // value was found
}

// follow walks the schema locations from the root, moving in args along
// with them, to the value the innermost keyword refused.
func follow(root *jsonschema.Schema, args any, locs []string, keyword string) (found, bool) {
	if root == nil || len(locs) == 0 || locs[0] != "root" {
		return found{}, false
	}
	steps := make([][]string, 0, len(locs))
	prev := ""
	for _, loc := range locs[1:] {
		if !strings.HasPrefix(loc, "/") {
			return found{}, false // a schema with an $id: not a pointer
		}
		if rest, ok := strings.CutPrefix(loc, prev+"/"); ok && prev != "" || prev == "" && !isJump(loc) {
			if prev == "" {
				rest = strings.TrimPrefix(loc, "/")
			}
			steps = append(steps, pointer(rest))
		} else {
			steps = append(steps, append([]string{"$ref"}, pointer(strings.TrimPrefix(loc, "/"))...))
		}
		prev = loc
	}
	return walk(root, found{value: args, schema: root, known: true}, steps, keyword)
}

// isJump reports whether a location below the root is a referenced
// definition rather than a place the instance can be.
func isJump(loc string) bool {
	return strings.HasPrefix(loc, "/$defs/") || strings.HasPrefix(loc, "/definitions/")
}

// pointer splits a JSON pointer's segments (without the leading "/").
func pointer(p string) []string {
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// walk applies the remaining steps from f. Steps into array items or
// additional properties, which the locations do not number, try each item
// or property in turn, and keep the first whose value the keyword refuses.
func walk(root *jsonschema.Schema, f found, steps [][]string, keyword string) (found, bool) {
	if len(steps) == 0 {
		return f, !f.known || refuses(f.schema, keyword, f.value)
	}
	segs := steps[0]
	if len(segs) > 0 && segs[0] == "$ref" {
		s := lookup(root, segs[1:])
		if s == nil {
			return found{}, false
		}
		f.schema = s
		return walk(root, f, steps[1:], keyword)
	}
	return descend(root, f, segs, steps[1:], keyword)
}

// descend applies the segments of one step, then the other steps.
func descend(root *jsonschema.Schema, f found, segs []string, rest [][]string, keyword string) (found, bool) {
	if len(segs) == 0 {
		return walk(root, f, rest, keyword)
	}
	s := f.schema
	next := func(schema *jsonschema.Schema, n int) (found, bool) {
		if schema == nil {
			return found{}, false
		}
		g := f
		g.schema = schema
		return descend(root, g, segs[n:], rest, keyword)
	}
	index := func(list []*jsonschema.Schema) *jsonschema.Schema {
		if len(segs) < 2 {
			return nil
		}
		i, err := strconv.Atoi(segs[1])
		if err != nil || i < 0 || i >= len(list) {
			return nil
		}
		return list[i]
	}
	switch segs[0] {
	case "properties":
		if len(segs) < 2 {
			return found{}, false
		}
		name := segs[1]
		obj, _ := f.value.(map[string]any)
		v, ok := obj[name]
		g := found{path: join(f.path, name), value: v, schema: s.Properties[name], known: ok}
		if g.schema == nil {
			return found{}, false
		}
		return descend(root, g, segs[2:], rest, keyword)
	case "prefixItems", "items":
		if segs[0] == "items" && (len(segs) < 2 || s.ItemsArray == nil) {
			// "items": every item (after prefixItems, in 2020-12).
			arr, _ := f.value.([]any)
			for i := len(s.PrefixItems); i < len(arr); i++ {
				g := found{path: fmt.Sprintf("%s[%d]", f.path, i), value: arr[i], schema: s.Items, known: true}
				if g.schema == nil {
					return found{}, false
				}
				if r, ok := descend(root, g, segs[1:], rest, keyword); ok {
					return r, true
				}
			}
			return found{path: f.path + "[?]"}, true
		}
		list := s.PrefixItems
		if segs[0] == "items" {
			list = s.ItemsArray
		}
		sub := index(list)
		i, _ := strconv.Atoi(segs[1])
		arr, _ := f.value.([]any)
		g := found{path: fmt.Sprintf("%s[%d]", f.path, i), schema: sub, known: i < len(arr)}
		if g.known {
			g.value = arr[i]
		}
		if sub == nil {
			return found{}, false
		}
		return descend(root, g, segs[2:], rest, keyword)
	case "additionalProperties", "patternProperties":
		obj, _ := f.value.(map[string]any)
		sub, n := s.AdditionalProperties, 1
		var re *regexp.Regexp
		if segs[0] == "patternProperties" {
			if len(segs) < 2 {
				return found{}, false
			}
			sub, n = s.PatternProperties[segs[1]], 2
			re, _ = regexp.Compile(segs[1])
		}
		if sub == nil {
			return found{}, false
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			if re != nil && re.MatchString(k) || re == nil && s.Properties[k] == nil {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			g := found{path: join(f.path, k), value: obj[k], schema: sub, known: true}
			if r, ok := descend(root, g, segs[n:], rest, keyword); ok {
				return r, true
			}
		}
		return found{}, false
	case "anyOf":
		return next(index(s.AnyOf), 2)
	case "oneOf":
		return next(index(s.OneOf), 2)
	case "allOf":
		return next(index(s.AllOf), 2)
	case "not":
		return next(s.Not, 1)
	case "if":
		return next(s.If, 1)
	case "then":
		return next(s.Then, 1)
	case "else":
		return next(s.Else, 1)
	case "dependentSchemas":
		if len(segs) < 2 {
			return found{}, false
		}
		return next(s.DependentSchemas[segs[1]], 2)
	case "$defs", "definitions":
		if len(segs) < 2 {
			return found{}, false
		}
		defs := s.Defs
		if segs[0] == "definitions" {
			defs = s.Definitions
		}
		return next(defs[segs[1]], 2)
	}
	return found{}, false
}

// lookup returns the subschema of root at the pointer segs.
func lookup(root *jsonschema.Schema, segs []string) *jsonschema.Schema {
	s := root
	for len(segs) > 0 && s != nil {
		var n int
		pick := func(list []*jsonschema.Schema) *jsonschema.Schema {
			n = 2
			if len(segs) < 2 {
				return nil
			}
			i, err := strconv.Atoi(segs[1])
			if err != nil || i < 0 || i >= len(list) {
				return nil
			}
			return list[i]
		}
		named := func(m map[string]*jsonschema.Schema) *jsonschema.Schema {
			n = 2
			if len(segs) < 2 {
				return nil
			}
			return m[segs[1]]
		}
		switch segs[0] {
		case "$defs":
			s = named(s.Defs)
		case "definitions":
			s = named(s.Definitions)
		case "properties":
			s = named(s.Properties)
		case "patternProperties":
			s = named(s.PatternProperties)
		case "dependentSchemas":
			s = named(s.DependentSchemas)
		case "prefixItems":
			s = pick(s.PrefixItems)
		case "anyOf":
			s = pick(s.AnyOf)
		case "oneOf":
			s = pick(s.OneOf)
		case "allOf":
			s = pick(s.AllOf)
		case "items":
			if s.ItemsArray != nil {
				s = pick(s.ItemsArray)
			} else {
				s, n = s.Items, 1
			}
		default:
			n = 1
			switch segs[0] {
			case "additionalProperties":
				s = s.AdditionalProperties
			case "not":
				s = s.Not
			case "if":
				s = s.If
			case "then":
				s = s.Then
			case "else":
				s = s.Else
			default:
				return nil
			}
		}
		segs = segs[min(n, len(segs)):]
	}
	return s
}

// join appends a property name to a path: "obj.deep", or `map["a b"]` for
// a name that is not a plain word.
func join(path, name string) string {
	plain := name != ""
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(name) + "]"
	case path == "":
		return name
	}
	return path + "." + name
}

// refuses reports whether keyword of s refuses v, as far as argcheck can
// tell: it decides which item of an array or which property the validator
// meant. Keywords it does not check are taken to refuse.
func refuses(s *jsonschema.Schema, keyword string, v any) bool {
	if s == nil {
		return true
	}
	switch keyword {
	case "type":
		got := typeOf(v)
		want := s.Types
		if s.Type != "" {
			want = []string{s.Type}
		}
		return !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number"))
	case "enum":
		for _, e := range s.Enum {
			if equal(e, v) {
				return false
			}
		}
		return true
	case "const":
		return s.Const == nil || !equal(*s.Const, v)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		n, ok := v.(float64)
		if !ok {
			return false
		}
		switch b := bound(s, keyword); {
		case b == nil:
			return true
		case keyword == "minimum":
			return n < *b
		case keyword == "maximum":
			return n > *b
		case keyword == "exclusiveMinimum":
			return n <= *b
		default:
			return n >= *b
		}
	case "multipleOf":
		n, ok := v.(float64)
		if !ok || s.MultipleOf == nil {
			return ok
		}
		q := n / *s.MultipleOf
		return q != math.Trunc(q)
	case "minLength", "maxLength":
		str, ok := v.(string)
		if !ok {
			return false
		}
		n := utf8.RuneCountInString(str)
		if keyword == "minLength" {
			return s.MinLength == nil || n < *s.MinLength
		}
		return s.MaxLength == nil || n > *s.MaxLength
	case "pattern":
		str, ok := v.(string)
		if !ok {
			return false
		}
		re, err := regexp.Compile(s.Pattern)
		return err != nil || !re.MatchString(str)
	case "required":
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, r := range s.Required {
			if _, has := obj[r]; !has {
				return true
			}
		}
		return false
	case "additionalProperties":
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
	keys:
		for k := range obj {
			if s.Properties[k] != nil {
				continue
			}
			for re := range s.PatternProperties {
				if r, err := regexp.Compile(re); err == nil && r.MatchString(k) {
					continue keys
				}
			}
			return true
		}
		return false
	case "minItems", "maxItems":
		arr, ok := v.([]any)
		if !ok {
			return false
		}
		if keyword == "minItems" {
			return s.MinItems == nil || len(arr) < *s.MinItems
		}
		return s.MaxItems == nil || len(arr) > *s.MaxItems
	}
	return true
}

// boundFromText reads the bound from the validator's text, "500/1 is
// greater than 100.000000", when there is no schema to read it from.
func boundFromText(detail string) *float64 {
	i := strings.LastIndex(detail, " ")
	if i < 0 {
		return nil
	}
	n, err := strconv.ParseFloat(detail[i+1:], 64)
	if err != nil {
		return nil
	}
	return &n
}

func bound(s *jsonschema.Schema, keyword string) *float64 {
	switch keyword {
	case "minimum":
		return s.Minimum
	case "maximum":
		return s.Maximum
	case "exclusiveMinimum":
		return s.ExclusiveMinimum
	case "exclusiveMaximum":
		return s.ExclusiveMaximum
	case "multipleOf":
		return s.MultipleOf
	}
	return nil
}

// equal compares JSON values as the validator does: numbers by value.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// typeOf returns the JSON Schema type of a decoded JSON value.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		if n, ok := number(x); ok {
			if n == math.Trunc(n) && !math.IsInf(n, 0) {
				return "integer"
			}
			return "number"
		}
	}
	return fmt.Sprintf("%T", v)
}

// article names a JSON Schema type with its article: "an integer".
func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	case "boolean":
		return "a boolean (true or false)"
	}
	return "a " + t
}

// describe names a value: `the string "2"`, "the number 2.5", "true",
// "null", "an object", "an array".
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	case string:
		return "the string " + quote(x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	if n, ok := number(v); ok {
		return "the number " + formatNumber(n)
	}
	return fmt.Sprint(v)
}

// show writes a value as JSON, shortened: 500, "abc", true.
func show(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	if n, ok := number(v); ok {
		return formatNumber(n)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// quote quotes a string, shortened to 60 characters.
func quote(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		r := []rune(s)
		return strconv.Quote(string(r[:57])) + "..."
	}
	return strconv.Quote(s)
}

func formatNumber(n float64) string { return strconv.FormatFloat(n, 'g', -1, 64) }

// word words the keyword's error for the value f points to. It returns ""
// when it has nothing better than the validator's text.
func word(f found, keyword, detail string) string {
	s := f.schema
	if s == nil {
		s = &jsonschema.Schema{}
	}
	things := "properties"
	thing := "property"
	if f.path == "" {
		things, thing = "arguments", "argument"
	}
	switch keyword {
	case "type":
		want := s.Types
		if s.Type != "" {
			want = []string{s.Type}
		}
		if len(want) == 0 {
			// `type: 2 has type "string", want "integer"`
			if _, w, ok := strings.Cut(detail, ", want "); ok {
				for _, t := range strings.Split(strings.Trim(w, `"`), ", ") {
					want = append(want, strings.TrimPrefix(t, "one of "))
				}
			}
		}
		words := make([]string, len(want))
		for i, t := range want {
			words[i] = article(strings.Trim(t, `"`))
		}
		if len(words) == 0 || !f.known {
			return ""
		}
		return "expected " + or(words) + ", got " + describe(f.value)
	case "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf":
		value := f.value
		if !f.known {
			// "500/1 is greater than 100.000000"
			first, _, _ := strings.Cut(detail, " ")
			r, ok := new(big.Rat).SetString(first)
			if !ok {
				return ""
			}
			value, _ = r.Float64()
		}
		b := bound(s, keyword)
		if b == nil {
			b = boundFromText(detail)
		}
		if b == nil {
			return ""
		}
		v, lim := show(value), formatNumber(*b)
		switch keyword {
		case "maximum":
			return v + " is above the maximum " + lim
		case "minimum":
			return v + " is below the minimum " + lim
		case "exclusiveMaximum":
			return v + " is not less than " + lim + "; it must be less than " + lim
		case "exclusiveMinimum":
			return v + " is not more than " + lim + "; it must be more than " + lim
		}
		return v + " is not a multiple of " + lim
	case "minLength", "maxLength":
		str, ok := f.value.(string)
		if !ok {
			return ""
		}
		n := utf8.RuneCountInString(str)
		if keyword == "minLength" && s.MinLength != nil {
			return fmt.Sprintf("%s is %s long, shorter than the minimum %s", quote(str), plural(n, "character"), plural(*s.MinLength, "character"))
		}
		if keyword == "maxLength" && s.MaxLength != nil {
			return fmt.Sprintf("%s is %s long, longer than the maximum %s", quote(str), plural(n, "character"), plural(*s.MaxLength, "character"))
		}
	case "pattern":
		if str, ok := f.value.(string); ok {
			return fmt.Sprintf("%s does not match the pattern %s", quote(str), s.Pattern)
		}
	case "enum":
		if !f.known || len(s.Enum) == 0 {
			return ""
		}
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = show(e)
		}
		return fmt.Sprintf("%s is not one of the allowed values: %s", show(f.value), strings.Join(vals, ", "))
	case "const":
		if !f.known || s.Const == nil {
			return ""
		}
		return fmt.Sprintf("expected %s, got %s", show(*s.Const), show(f.value))
	case "required":
		// `required: missing properties: ["count"]`
		var names []string
		if _, list, ok := strings.Cut(detail, "missing properties: "); ok {
			names = quoted(list)
		}
		if len(names) == 0 {
			return ""
		}
		if len(names) == 1 {
			return fmt.Sprintf("missing required %s %s", thing, quoteAll(names))
		}
		return fmt.Sprintf("missing required %s %s", things, quoteAll(names))
	case "additionalProperties":
		// `unexpected additional properties ["more" "extra"]`
		names := quoted(detail)
		if len(names) == 0 {
			return ""
		}
		sort.Strings(names)
		allowed := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			allowed = append(allowed, name)
		}
		sort.Strings(allowed)
		known := ""
		if len(allowed) > 0 {
			known = "; the " + things + " are " + quoteAll(allowed)
		}
		if len(names) == 1 {
			return fmt.Sprintf("unexpected %s %s%s", thing, quoteAll(names), known)
		}
		return fmt.Sprintf("unexpected %s %s%s", things, quoteAll(names), known)
	case "minItems", "maxItems":
		arr, ok := f.value.([]any)
		if !ok {
			return ""
		}
		if keyword == "minItems" && s.MinItems != nil {
			return fmt.Sprintf("%s, fewer than the minimum %d", plural(len(arr), "item"), *s.MinItems)
		}
		if keyword == "maxItems" && s.MaxItems != nil {
			return fmt.Sprintf("%s, more than the maximum %d", plural(len(arr), "item"), *s.MaxItems)
		}
	case "uniqueItems":
		// `uniqueItems: array items 1 and 0 are equal`
		var i, j int
		if _, err := fmt.Sscanf(detail, "array items %d and %d are equal", &i, &j); err == nil {
			return fmt.Sprintf("items %d and %d are equal; the items must be unique", min(i, j), max(i, j))
		}
	case "minProperties", "maxProperties":
		obj, ok := f.value.(map[string]any)
		if !ok {
			return ""
		}
		if keyword == "minProperties" && s.MinProperties != nil {
			return fmt.Sprintf("%s, fewer than the minimum %d", plural(len(obj), "property"), *s.MinProperties)
		}
		if keyword == "maxProperties" && s.MaxProperties != nil {
			return fmt.Sprintf("%s, more than the maximum %d", plural(len(obj), "property"), *s.MaxProperties)
		}
	case "anyOf", "oneOf":
		alts := s.AnyOf
		if keyword == "oneOf" {
			alts = s.OneOf
		}
		if strings.HasPrefix(detail, "validated against both") {
			return "matches more than one of the allowed forms, where exactly one must match"
		}
		// Alternatives that are types or constants, none of which the
		// value is: say which they are.
		var forms []string
		for _, a := range alts {
			var form string
			switch {
			case a.Type != "" && a.Type != typeOf(f.value) && !(a.Type == "number" && typeOf(f.value) == "integer"):
				form = article(a.Type)
			case a.Const != nil:
				form = show(*a.Const)
			}
			if form == "" {
				forms = nil
				break
			}
			if !slices.Contains(forms, form) {
				forms = append(forms, form)
			}
		}
		if f.known && len(forms) > 0 {
			return "expected " + or(forms) + ", got " + describe(f.value)
		}
		if f.known {
			return describe(f.value) + " matches none of the allowed forms"
		}
	case "not":
		if f.known {
			return show(f.value) + " is not allowed"
		}
	}
	return ""
}

// quotedString matches a string as Go's %q writes it.
var quotedString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// quoted returns the strings of a list as Go's %q writes a []string:
// ["a" "b"].
func quoted(list string) []string {
	var names []string
	for _, m := range quotedString.FindAllString(list, -1) {
		if n, err := strconv.Unquote(m); err == nil {
			names = append(names, n)
		}
	}
	return names
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// or joins alternatives: "a, b or c".
func or(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
