package main

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// stuck describes one key whose history has no linearization: Porcupine's longest linearizable
// prefix of it, the state it leaves, and lines a test prints (the last operations of that prefix
// and the operations that could come next, none of which fits).
type stuck struct {
	Key        string   `json:"key"`
	Ops        int      `json:"ops"`
	Linearized int      `json:"linearized"`
	State      string   `json:"state"`
	Lines      []string `json:"lines"`
}

func seconds(ns int64) string { return fmt.Sprintf("%.6f", float64(ns)/1e9) }

// describe is one operation as a line: its time span, client and server, what it did and, for
// an operation that did not answer, its error.
func describe(m porcupine.Model, o porcupine.Operation, h history) string {
	src := h.Ops[o.Metadata.(int)]
	where := fmt.Sprintf("c%d", o.ClientId)
	if src.Node != nil {
		where += fmt.Sprintf("@n%d", *src.Node)
	}
	span := seconds(o.Call) + "-"
	if o.Return == math.MaxInt64 {
		span += "?"
	} else {
		span += seconds(o.Return)
	}
	line := fmt.Sprintf("#%d %s s %s %s", o.Metadata.(int), span, where, m.DescribeOperation(o.Input, o.Output))
	if src.Status == "unknown" {
		line += fmt.Sprintf(" (unknown: %s", src.Error)
		if src.Ret != nil {
			line += ", gave up at " + seconds(*src.Ret) + " s"
		}
		line += ")"
	}
	return line
}

// diagnose explains every key (partition) that has no linearization. The point where a
// linearization gets stuck is the earliest return among the operations its longest prefix
// leaves out: one of the operations called before it must come next, and none fits the state.
func diagnose(m porcupine.Model, ops []porcupine.Operation, h history, info porcupine.LinearizationInfo, window int) []stuck {
	parts := m.Partition(ops) // the partitions (and their order) the check used
	partials := info.PartialLinearizations()
	var out []stuck
	for p, part := range parts {
		if p >= len(partials) || len(part) == 0 {
			continue
		}
		var longest []int
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(part) {
			continue // this key is linearizable
		}
		s := stuck{Key: part[0].Input.(input).key, Ops: len(part), Linearized: len(longest)}
		// replay the prefix: the state after each operation
		state := m.Init()
		states := make([]string, len(longest))
		in := make(map[int]bool, len(longest))
		for i, id := range longest {
			_, state = m.Step(state, part[id].Input, part[id].Output)
			states[i] = m.DescribeState(state)
			in[id] = true
		}
		s.State = m.DescribeState(state)
		s.Lines = append(s.Lines, fmt.Sprintf("key %s: %d operations, the longest linearizable prefix has %d, state after it %s", s.Key, s.Ops, s.Linearized, s.State))
		from := max(0, len(longest)-window)
		s.Lines = append(s.Lines, fmt.Sprintf("last %d operations of that prefix (linearization order, state after each):", len(longest)-from))
		for i := from; i < len(longest); i++ {
			s.Lines = append(s.Lines, "  "+describe(m, part[longest[i]], h)+"  => "+states[i])
		}
		// the operations left out, the earliest return among them, and which were called before it
		var rest []int
		stuckAt := int64(math.MaxInt64)
		for id, o := range part {
			if !in[id] {
				rest = append(rest, id)
				stuckAt = min(stuckAt, o.Return)
			}
		}
		sort.Slice(rest, func(a, b int) bool { return part[rest[a]].Call < part[rest[b]].Call })
		var next []int
		for _, id := range rest {
			if part[id].Call <= stuckAt {
				next = append(next, id)
			}
		}
		at := "never (every left-out operation is unknown)"
		if stuckAt != math.MaxInt64 {
			at = seconds(stuckAt) + " s"
		}
		shown := min(len(next), 2*window)
		s.Lines = append(s.Lines, fmt.Sprintf("%d left out; one of the %d called before the earliest return among them (%s) must come next, none fits (first %d by call time):", len(rest), len(next), at, shown))
		for _, id := range next[:shown] {
			ok, _ := m.Step(state, part[id].Input, part[id].Output)
			fits := "does not fit"
			if ok {
				fits = "fits, but what follows does not"
			}
			s.Lines = append(s.Lines, "  "+describe(m, part[id], h)+"  ("+fits+")")
		}
		out = append(out, s)
	}
	return out
}
