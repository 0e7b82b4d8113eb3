// Command lincheck checks that histories of operations on the coordination objects are
// linearizable, with Porcupine (github.com/anishathalye/porcupine). A history is JSON written
// by the tests (coordination/test/integration/linearizability.test.ts):
//
//	{"ops": [{"client": 0, "key": "long.a", "op": "add", "arg": 1, "out": 7, "status": "ok",
//	          "call": 1200, "ret": 3400}, ...]}
//
// op is read (out: the value; null, or the key's "init" value, when absent), write (arg), add (arg: delta; out: the new
// value; an absent value counts as 0), or cas (arg: [expect, update]; out: true or false).
// Values are JSON; they compare as canonical JSON text. status is "ok" (out is the answer),
// "fail" (the operation certainly did not happen: drop it) or "unknown" (it may or may not have
// happened: it may take effect at any time after its call, or never). call and ret are times in
// ns on one monotonic clock; an unknown operation's ret is ignored. node (the server the client
// used) and error (its error code) are not checked, only shown when a key is not linearizable.
//
// Exit status: 0 linearizable, 1 not linearizable (a visualization is written with -viz),
// 2 the check timed out or the input is bad. The verdict is printed as one JSON line; when the
// history is not linearizable it names each key that is not ("illegal") with the window where
// its longest linearization gets stuck (see diagnose), as lines a test can print.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type op struct {
	Client int             `json:"client"`
	Key    string          `json:"key"`
	Op     string          `json:"op"`
	Arg    json.RawMessage `json:"arg"`
	Out    json.RawMessage `json:"out"`
	Status string          `json:"status"`
	Call   int64           `json:"call"`
	Ret    *int64          `json:"ret"`
	// not checked, shown when a key is not linearizable
	Node  *int   `json:"node"`
	Error string `json:"error"`
}

type history struct {
	Ops []op `json:"ops"`
	// Init gives the value a key reads as before any write (default null), e.g. 0 for counters.
	Init map[string]json.RawMessage `json:"init"`
}

// input and output of one operation in the model; values are canonical JSON text ("null": absent).
type input struct {
	key    string
	op     string
	arg    string
	expect string
	update string
	delta  int64
	absent string // what the key reads as before any write
}

type output struct {
	unknown bool
	value   string
	ok      bool
}

func canonical(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "null", nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v) // maps are written with sorted keys
	return string(b), err
}

func number(s string) (int64, bool) {
	if s == "null" {
		return 0, true
	}
	var n json.Number
	if json.Unmarshal([]byte(s), &n) != nil {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// apply returns the state after in, and the output it gives.
func apply(state string, in input) (string, output) {
	if state == "null" {
		state = in.absent
	}
	switch in.op {
	case "read":
		return state, output{value: state}
	case "write":
		return in.arg, output{}
	case "add":
		n, ok := number(state)
		if !ok {
			return state, output{value: "NaN"}
		}
		next := fmt.Sprint(n + in.delta)
		return next, output{value: next}
	case "cas":
		if state == in.expect {
			return in.update, output{ok: true}
		}
		return state, output{ok: false}
	}
	return state, output{value: "bad op"}
}

var model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range history {
			k := o.Input.(input).key
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], o)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{"null"} },
	Step: func(st, in, out interface{}) []interface{} {
		state, i, o := st.(string), in.(input), out.(output)
		next, got := apply(state, i)
		if o.unknown {
			if i.op == "read" {
				return []interface{}{state}
			}
			return []interface{}{state, next} // it may not have happened, or happened
		}
		switch i.op {
		case "cas":
			if got.ok != o.ok {
				return nil
			}
		case "read", "add":
			if got.value != o.value {
				return nil
			}
		}
		return []interface{}{next}
	},
	Equal: func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		res := o.value
		if i.op == "cas" {
			res = fmt.Sprint(o.ok)
		}
		if o.unknown {
			res = "?"
		}
		switch i.op {
		case "add":
			return fmt.Sprintf("%s add(%d) -> %s", i.key, i.delta, res)
		case "cas":
			return fmt.Sprintf("%s cas(%s, %s) -> %s", i.key, i.expect, i.update, res)
		case "write":
			return fmt.Sprintf("%s write(%s)", i.key, i.arg)
		}
		return fmt.Sprintf("%s read -> %s", i.key, res)
	},
	DescribeState: func(st interface{}) string { return st.(string) },
}

func convert(h history) ([]porcupine.Operation, int, int, error) {
	var ops []porcupine.Operation
	unknown, failed := 0, 0
	for n, o := range h.Ops {
		in := input{key: o.Key, op: o.Op, absent: "null"}
		var err error
		if raw, ok := h.Init[o.Key]; ok {
			if in.absent, err = canonical(raw); err != nil {
				return nil, 0, 0, fmt.Errorf("init %s: %v", o.Key, err)
			}
		}
		switch o.Op {
		case "read":
		case "write":
			in.arg, err = canonical(o.Arg)
		case "add":
			err = json.Unmarshal(o.Arg, &in.delta)
		case "cas":
			var pair []json.RawMessage
			if err = json.Unmarshal(o.Arg, &pair); err == nil && len(pair) != 2 {
				err = fmt.Errorf("cas arg must be [expect, update]")
			}
			if err == nil {
				if in.expect, err = canonical(pair[0]); err == nil {
					in.update, err = canonical(pair[1])
				}
			}
		default:
			err = fmt.Errorf("unknown op %q", o.Op)
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("op %d: %v", n, err)
		}
		var out output
		switch o.Status {
		case "fail":
			failed++
			continue
		case "unknown":
			unknown++
			out.unknown = true
		case "ok":
			if o.Op == "cas" {
				if err := json.Unmarshal(o.Out, &out.ok); err != nil {
					return nil, 0, 0, fmt.Errorf("op %d: cas out must be true or false", n)
				}
			} else if out.value, err = canonical(o.Out); err != nil {
				return nil, 0, 0, fmt.Errorf("op %d: out: %v", n, err)
			}
		default:
			return nil, 0, 0, fmt.Errorf("op %d: status must be ok, fail or unknown, not %q", n, o.Status)
		}
		ret := int64(math.MaxInt64)
		if !out.unknown {
			if o.Ret == nil || *o.Ret < o.Call {
				return nil, 0, 0, fmt.Errorf("op %d: an ok operation needs ret >= call", n)
			}
			ret = *o.Ret
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: in, Call: o.Call, Output: out, Return: ret, Metadata: n})
	}
	return ops, unknown, failed, nil
}

func main() {
	viz := flag.String("viz", "", "write Porcupine's visualization (HTML) here when the history is not linearizable")
	timeout := flag.Duration("timeout", 60*time.Second, "give up (exit 2) after this long")
	window := flag.Int("window", 12, "operations shown before and around the point where a key's linearization gets stuck")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lincheck [-viz out.html] [-timeout 60s] history.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "lincheck:", err)
		os.Exit(2)
	}
	var h history
	if err := json.Unmarshal(raw, &h); err != nil {
		fmt.Fprintln(os.Stderr, "lincheck: bad history:", err)
		os.Exit(2)
	}
	ops, unknown, failed, err := convert(h)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lincheck: bad history:", err)
		os.Exit(2)
	}
	m := model.ToModel()
	t0 := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, ops, *timeout)
	verdict := map[string]any{
		"result": string(res), "ops": len(ops), "unknown": unknown, "failed_dropped": failed,
		"keys": len(m.Partition(ops)), "check_ms": time.Since(t0).Milliseconds(),
	}
	if res == porcupine.Illegal {
		verdict["illegal"] = diagnose(m, ops, h, info, *window)
	}
	if res == porcupine.Illegal && *viz != "" {
		if f, err := os.Create(*viz); err == nil {
			_ = porcupine.Visualize(m, info, f)
			f.Close()
			verdict["visualization"] = *viz
		}
	}
	b, _ := json.Marshal(verdict)
	fmt.Println(string(b))
	switch res {
	case porcupine.Ok:
		os.Exit(0)
	case porcupine.Illegal:
		os.Exit(1)
	default:
		os.Exit(2)
	}
}
