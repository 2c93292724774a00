package options

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Checks shared by several flags.

func atLeast(lo int, get func(*Options) Opt[int]) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); v.Set && v.V < lo {
			return fmt.Errorf("%d: want >= %d", v.V, lo)
		}
		return nil
	}
}

func intAtLeast(lo int, get func(*Options) int) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); v < lo {
			return fmt.Errorf("%d: want >= %d", v, lo)
		}
		return nil
	}
}

func floatAtLeast(lo float64, get func(*Options) float64) func(*Options) error {
	return func(o *Options) error {
		if v := get(o); !(v >= lo) {
			return fmt.Errorf("%s: want >= %s", fmtF(v), fmtF(lo))
		}
		return nil
	}
}

// inRange checks lo <= v < hi, or v <= hi with closed.
func inRange(lo, hi float64, closed bool, get func(*Options) float64) func(*Options) error {
	return func(o *Options) error {
		v := get(o)
		if v >= lo && (v < hi || closed && v == hi) {
			return nil
		}
		if closed {
			return fmt.Errorf("%s: want in [%s,%s]", fmtF(v), fmtF(lo), fmtF(hi))
		}
		return fmt.Errorf("%s: want in [%s,%s)", fmtF(v), fmtF(lo), fmtF(hi))
	}
}

func nonEmpty(get func(*Options) string) func(*Options) error {
	return func(o *Options) error {
		if get(o) == "" {
			return errors.New("is empty")
		}
		return nil
	}
}

// flag.Values. Plain fields use the plain values: their default is the
// field's value in Defaults(). Opt fields record that they were set.

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

// notValue is a --no-X flag bound to X.
type notValue bool

func (v *notValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = notValue(!b)
	return nil
}
func (v *notValue) String() string   { return strconv.FormatBool(!bool(*v)) }
func (v *notValue) IsBoolFlag() bool { return true }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type uint64Value uint64

func (v *uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return errors.New("want an integer in [0, 2^64)")
	}
	*v = uint64Value(n)
	return nil
}
func (v *uint64Value) String() string { return strconv.FormatUint(uint64(*v), 10) }

type floatValue float64

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return errors.New("want a number")
	}
	*v = floatValue(f)
	return nil
}
func (v *floatValue) String() string { return fmtF(float64(*v)) }

type optInt struct{ p *Opt[int] }

func (v *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want an integer")
	}
	*v.p = Some(n)
	return nil
}

func (v *optInt) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return strconv.Itoa(v.p.V)
}

// optWord is a float option whose unset value has a name (auto: fitted
// to the data; data: estimated from it), which may also be given.
type optWord struct {
	p     *Opt[float64]
	unset string
}

func (v *optWord) Set(s string) error {
	if s == v.unset {
		*v.p = Opt[float64]{}
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a number or %s", v.unset)
	}
	*v.p = Some(x)
	return nil
}

func (v *optWord) String() string {
	if v.p == nil || !v.p.Set {
		return v.unset
	}
	return fmtF(v.p.V)
}

type optString struct{ p *Opt[string] }

func (v *optString) Set(s string) error { *v.p = Some(s); return nil }
func (v *optString) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return v.p.V
}

// enumValue is a flag whose values are the names of an enum.
type enumValue[T any] struct {
	p     *T
	parse func(string) (T, error)
}

func (v *enumValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *enumValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return fmt.Sprint(*v.p)
}

// optEnum is an enum option that records whether it was given.
type optEnum[T any] struct {
	p     *Opt[T]
	parse func(string) (T, error)
}

func (v *optEnum[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = Some(x)
	return nil
}

func (v *optEnum[T]) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return fmt.Sprint(v.p.V)
}

// namesValue is a comma-separated class set: no empty name, no repeats.
type namesValue struct{ p *[]string }

func (v *namesValue) Set(s string) error {
	names := strings.Split(s, ",")
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("%q: name %d is empty (a stray comma?)", s, i+1)
		}
		if seen[n] {
			return fmt.Errorf("%q: class %q given twice", s, n)
		}
		seen[n] = true
	}
	*v.p = names
	return nil
}

func (v *namesValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

// headValue is --head: fit, off or a share (parseHead), unset as empty.
type headValue struct{ p *Opt[string] }

func (v *headValue) Set(s string) error {
	if err := parseHead(s); err != nil {
		return err
	}
	*v.p = Some(s)
	return nil
}

func (v *headValue) String() string {
	if v.p == nil || !v.p.Set {
		return ""
	}
	return v.p.V
}
