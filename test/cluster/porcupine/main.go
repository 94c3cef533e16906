// dkv-linearizability reads a history of etcd key-value operations (JSON, on
// stdin) recorded by concurrent clients, and says whether it is linearizable
// with porcupine: each key a register, partitioned by key. An operation whose
// outcome the client could not learn (a timeout, a dropped connection) may or
// may not have taken effect, and is checked as either. A final read of every
// key after the action makes a lost acknowledged write a violation too.
//
// A write of unknown outcome whose value no read (nor a successful
// compare-and-swap) ever observed is left out first, as etcd's robustness
// tests do: had it taken effect, nothing saw it. Each such write may be
// linearized anywhere after its call, and a few dozen of them on one key make
// the search explode. Only if the history without them is not linearizable is
// the whole history checked, so leaving them out can never hide a violation.
//
// Usage: dkv-linearizability [-visualize FILE] [-timeout 60s] < history.json
// Prints one JSON line: {"result":"Ok"|"Illegal"|"Unknown","operations":N,"keys":K}
// and exits 0 for Ok, 1 for Illegal, 2 for Unknown or bad input.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// op is one operation as the test recorded it.
type op struct {
	Client int     `json:"client"`
	Kind   string  `json:"kind"` // put, get, delete, cas
	Key    string  `json:"key"`
	Value  *string `json:"value,omitempty"`  // put, cas: the value written
	Expect *string `json:"expect,omitempty"` // cas: the value compared (nil: the key absent)
	// Outcome: Known false when the client cannot tell whether a write took effect.
	Known   bool    `json:"known"`
	Found   *string `json:"found,omitempty"` // get: the value read (nil: absent)
	Swapped bool    `json:"swapped"`         // cas: the comparison held
	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
}

// state is a register's value; absent is the empty pointer.
type state struct {
	present bool
	value   string
}

func valueOf(p *string) state {
	if p == nil {
		return state{}
	}
	return state{present: true, value: *p}
}

func step(s state, o op) []state {
	switch o.Kind {
	case "put":
		if !o.Known {
			return []state{s, valueOf(o.Value)}
		}
		return []state{valueOf(o.Value)}
	case "delete":
		if !o.Known {
			return []state{s, {}}
		}
		return []state{{}}
	case "get":
		if valueOf(o.Found) == s {
			return []state{s}
		}
		return nil
	case "cas":
		holds := valueOf(o.Expect) == s
		if !o.Known {
			if holds {
				return []state{s, valueOf(o.Value)}
			}
			return []state{s}
		}
		if o.Swapped != holds {
			return nil
		}
		if holds {
			return []state{valueOf(o.Value)}
		}
		return []state{s}
	}
	return nil
}

func describe(s state) string {
	if !s.present {
		return "(absent)"
	}
	return s.value
}

func main() {
	visualize := flag.String("visualize", "", "write porcupine's visualization here when the history is not linearizable")
	timeout := flag.Duration("timeout", 60*time.Second, "give up (Unknown) after this long")
	flag.Parse()
	var ops []op
	if err := json.NewDecoder(os.Stdin).Decode(&ops); err != nil {
		fmt.Fprintf(os.Stderr, "dkv-linearizability: reading the history: %v\n", err)
		os.Exit(2)
	}
	keys := map[string]bool{}
	observed := map[string]bool{}
	for _, o := range ops {
		keys[o.Key] = true
		if o.Kind == "get" && o.Found != nil {
			observed[o.Key+"\x00"+*o.Found] = true
		}
		if o.Kind == "cas" && o.Known && o.Swapped && o.Expect != nil {
			observed[o.Key+"\x00"+*o.Expect] = true
		}
	}
	history := func(keepUnobserved bool) []porcupine.Operation {
		h := make([]porcupine.Operation, 0, len(ops))
		for _, o := range ops {
			unobserved := !o.Known && (o.Kind == "put" || o.Kind == "cas") && o.Value != nil && !observed[o.Key+"\x00"+*o.Value]
			if unobserved && !keepUnobserved {
				continue
			}
			h = append(h, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: o, Return: o.Return})
		}
		return h
	}
	nondeterministic := &porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{state{}} },
		Step: func(s, input, _ interface{}) []interface{} {
			next := step(s.(state), input.(op))
			out := make([]interface{}, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
		DescribeOperation: func(input, _ interface{}) string {
			o := input.(op)
			switch o.Kind {
			case "get":
				return fmt.Sprintf("get(%s) -> %s", o.Key, describe(valueOf(o.Found)))
			case "cas":
				return fmt.Sprintf("cas(%s, %s -> %s) = %v (known %v)", o.Key, describe(valueOf(o.Expect)), describe(valueOf(o.Value)), o.Swapped, o.Known)
			case "put":
				return fmt.Sprintf("put(%s, %s) (known %v)", o.Key, describe(valueOf(o.Value)), o.Known)
			}
			return fmt.Sprintf("%s(%s) (known %v)", o.Kind, o.Key, o.Known)
		},
		DescribeState: func(s interface{}) string { return describe(s.(state)) },
	}
	model := nondeterministic.ToModel()
	model.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, o := range h {
			k := o.Input.(op).Key
			byKey[k] = append(byKey[k], o)
		}
		names := make([]string, 0, len(byKey))
		for k := range byKey {
			names = append(names, k)
		}
		sort.Strings(names)
		parts := make([][]porcupine.Operation, 0, len(names))
		for _, k := range names {
			parts = append(parts, byKey[k])
		}
		return parts
	}
	result, info := porcupine.CheckOperationsVerbose(model, history(false), *timeout)
	if result == porcupine.Illegal {
		// Without the unobserved writes it is not linearizable: the whole history decides.
		result, info = porcupine.CheckOperationsVerbose(model, history(true), *timeout)
	}
	if result == porcupine.Illegal && *visualize != "" {
		if err := porcupine.VisualizePath(model, info, *visualize); err != nil {
			fmt.Fprintf(os.Stderr, "dkv-linearizability: visualizing: %v\n", err)
		}
	}
	line, _ := json.Marshal(map[string]interface{}{"result": string(result), "operations": len(ops), "keys": len(keys)})
	fmt.Println(string(line))
	switch result {
	case porcupine.Ok:
		os.Exit(0)
	case porcupine.Illegal:
		os.Exit(1)
	}
	os.Exit(2)
}
