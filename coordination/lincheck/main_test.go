package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// operations parses a history as lincheck reads it and converts it for Porcupine.
func operations(t *testing.T, js string) (history, []porcupine.Operation) {
	t.Helper()
	var h history
	if err := json.Unmarshal([]byte(js), &h); err != nil {
		t.Fatal(err)
	}
	ops, _, _, err := convert(h)
	if err != nil {
		t.Fatal(err)
	}
	return h, ops
}

func check(t *testing.T, js string) porcupine.CheckResult {
	t.Helper()
	_, ops := operations(t, js)
	return porcupine.CheckOperationsTimeout(model.ToModel(), ops, 10*time.Second)
}

func TestLinearizableHistories(t *testing.T) {
	ok := []string{
		// two concurrent increments, both seen
		`{"ops":[{"client":0,"key":"a","op":"add","arg":1,"out":1,"status":"ok","call":0,"ret":10},
		         {"client":1,"key":"a","op":"add","arg":1,"out":2,"status":"ok","call":1,"ret":9},
		         {"client":2,"key":"a","op":"read","out":2,"status":"ok","call":11,"ret":12}]}`,
		// an unknown write that took effect later
		`{"ops":[{"client":0,"key":"r","op":"write","arg":{"b":1,"a":2},"status":"unknown","call":0},
		         {"client":1,"key":"r","op":"read","out":null,"status":"ok","call":1,"ret":2},
		         {"client":1,"key":"r","op":"read","out":{"a":2,"b":1},"status":"ok","call":3,"ret":4}]}`,
		// an unknown write that never happened
		`{"ops":[{"client":0,"key":"r","op":"write","arg":5,"status":"unknown","call":0},
		         {"client":1,"key":"r","op":"read","out":null,"status":"ok","call":10,"ret":20}]}`,
		// a counter reads 0 before its first increment
		`{"init":{"n":0},"ops":[{"client":0,"key":"n","op":"read","out":0,"status":"ok","call":0,"ret":1},
		         {"client":0,"key":"n","op":"cas","arg":[0,4],"out":true,"status":"ok","call":2,"ret":3},
		         {"client":0,"key":"n","op":"add","arg":1,"out":5,"status":"ok","call":4,"ret":5}]}`,
		// cas
		`{"ops":[{"client":0,"key":"c","op":"write","arg":1,"status":"ok","call":0,"ret":1},
		         {"client":1,"key":"c","op":"cas","arg":[1,2],"out":true,"status":"ok","call":2,"ret":5},
		         {"client":2,"key":"c","op":"cas","arg":[1,3],"out":false,"status":"ok","call":3,"ret":6},
		         {"client":2,"key":"c","op":"read","out":2,"status":"ok","call":7,"ret":8}]}`,
	}
	for i, h := range ok {
		if r := check(t, h); r != porcupine.Ok {
			t.Errorf("history %d: %s, want Ok", i, r)
		}
	}
}

func TestNonLinearizableHistories(t *testing.T) {
	bad := []string{
		// a stale read after a completed write
		`{"ops":[{"client":0,"key":"a","op":"write","arg":1,"status":"ok","call":0,"ret":1},
		         {"client":1,"key":"a","op":"read","out":null,"status":"ok","call":2,"ret":3}]}`,
		// a lost increment
		`{"ops":[{"client":0,"key":"a","op":"add","arg":1,"out":1,"status":"ok","call":0,"ret":1},
		         {"client":1,"key":"a","op":"add","arg":1,"out":1,"status":"ok","call":2,"ret":3}]}`,
		// both cas succeed from the same expected value
		`{"ops":[{"client":0,"key":"c","op":"write","arg":1,"status":"ok","call":0,"ret":1},
		         {"client":1,"key":"c","op":"cas","arg":[1,2],"out":true,"status":"ok","call":2,"ret":5},
		         {"client":2,"key":"c","op":"cas","arg":[1,3],"out":true,"status":"ok","call":2,"ret":5}]}`,
	}
	for i, h := range bad {
		if r := check(t, h); r != porcupine.Illegal {
			t.Errorf("history %d: %s, want Illegal", i, r)
		}
	}
}

func TestDiagnoseNamesTheKeyAndTheStuckPoint(t *testing.T) {
	// key "a" is fine; key "b" has a read of 1 after a completed write of 2 (a stale read)
	js := `{"ops":[
	  {"client":0,"key":"a","op":"write","arg":1,"status":"ok","call":0,"ret":10},
	  {"client":0,"key":"b","op":"write","arg":1,"status":"ok","call":0,"ret":1000,"node":0},
	  {"client":1,"key":"b","op":"write","arg":2,"status":"ok","call":2000,"ret":3000,"node":2},
	  {"client":2,"key":"b","op":"write","arg":3,"status":"unknown","call":2500,"ret":9000,"node":1,"error":"EDGE_COORDINATION_SDK_UNAVAILABLE"},
	  {"client":1,"key":"b","op":"read","out":1,"status":"ok","call":4000,"ret":5000,"node":1}]}`
	h, ops := operations(t, js)
	m := model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, 10*time.Second)
	if res != porcupine.Illegal {
		t.Fatalf("%s, want Illegal", res)
	}
	d := diagnose(m, ops, h, info, 5)
	if len(d) != 1 || d[0].Key != "b" || d[0].Ops != 4 {
		t.Fatalf("diagnosis %+v, want key b only", d)
	}
	all := strings.Join(d[0].Lines, "\n")
	for _, want := range []string{"#4 0.000004-0.000005 s c1@n1 b read -> 1", "(unknown: EDGE_COORDINATION_SDK_UNAVAILABLE, gave up at 0.000009 s)", "#2 0.000002-0.000003 s c1@n2 b write(2)"} {
		if !strings.Contains(all, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, all)
		}
	}
	t.Log("\n" + all)
}
