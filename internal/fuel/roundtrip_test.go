package fuel_test

import (
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// roundTrips are modules covering every class of instruction Rewrite
// decodes, with calls whose results must not change.
var roundTrips = []struct {
	name     string
	src      string
	flags    []string
	features []api.CoreFeatures
	calls    []call
}{
	{name: "control", src: `(module
  (func $sum (export "sum") (param i32) (result i32) (local $acc i32)
    (block $out
      (loop $l
        (br_if $out (i32.eqz (local.get 0)))
        (local.set $acc (i32.add (local.get $acc) (local.get 0)))
        (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  (func (export "table") (param i32) (result i32)
    (block $c (block $b (block $a
      (br_table $a $b $c (local.get 0)))
      (return (i32.const 10)))
      (return (i32.const 20)))
    (i32.const 30))
  (func (export "ifelse") (param i32) (result i32)
    (if (result i32) (local.get 0) (then (i32.const 1)) (else (i32.const 2))))
  (func (export "select") (param i32) (result i64)
    (select (result i64) (i64.const 5) (i64.const 6) (local.get 0)))
  (func (export "select_untyped") (param i32) (result i32)
    (select (i32.const 5) (i32.const 6) (local.get 0)))
  (func (export "nested") (param i32) (result i32) (local $i i32) (local $j i32) (local $n i32)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (local.get 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (local.get 0))))
    (local.get $n))
  (func (export "unreachable") (unreachable))
  (func (export "nop") (result i32) (nop) (drop (i32.const 3)) (i32.const 4))
  (func $recurse (export "recurse") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
      (else (i32.add (i32.const 2) (call $recurse (i32.sub (local.get 0) (i32.const 1)))))))
)`, calls: []call{
		{"sum", args(0)}, {"sum", args(100000)}, {"table", args(0)}, {"table", args(1)}, {"table", args(2)}, {"table", args(9)},
		{"ifelse", args(0)}, {"ifelse", args(1)}, {"select", args(0)}, {"select", args(1)}, {"select_untyped", args(1)},
		{"nested", args(1500)}, {"unreachable", nil}, {"nop", nil}, {"recurse", args(1000)},
	}},
	{name: "multi-value", src: `(module
  (func $swap (param i32 i64) (result i64 i32) (local.get 1) (local.get 0))
  (func (export "blocks") (param i32) (result i32)
    (i32.const 1) (i32.const 2)
    (block (param i32 i32) (result i32) (i32.add))
    (loop (param i32) (result i32)
      (i32.const 3) (i32.mul)
      (local.get 0) (i32.const 1) (i32.sub) (local.tee 0)
      (if (param i32) (result i32) (then (br 1)) (else))))
  (func (export "swap") (param i32 i64) (result i64 i32) (call $swap (local.get 0) (local.get 1)))
)`, calls: []call{{"blocks", args(4)}, {"swap", args(7, 9)}}},
	{name: "numeric", src: `(module
  (func (export "i32") (param i32 i32) (result i32)
    (i32.xor (i32.rotl (i32.mul (local.get 0) (local.get 1)) (i32.const 5))
      (i32.add (i32.clz (local.get 0)) (i32.popcnt (local.get 1)))))
  (func (export "i64") (param i64 i64) (result i64)
    (i64.add (i64.div_u (local.get 0) (i64.or (local.get 1) (i64.const 1))) (i64.const -1234567890123)))
  (func (export "float") (param f64) (result f64)
    (f64.add (f64.sqrt (f64.abs (local.get 0)))
      (f64.promote_f32 (f32.mul (f32.const 1.5) (f32.demote_f64 (local.get 0))))))
  (func (export "convert") (param f64) (result i64)
    (i64.add (i64.trunc_sat_f64_s (local.get 0))
      (i64.extend_i32_u (i32.trunc_sat_f32_u (f32.demote_f64 (local.get 0))))))
  (func (export "signext") (param i32) (result i64)
    (i64.add (i64.extend8_s (i64.extend_i32_u (local.get 0)))
      (i64.extend_i32_s (i32.extend16_s (local.get 0)))))
  (func (export "reinterpret") (param i64) (result i64)
    (i64.reinterpret_f64 (f64.reinterpret_i64 (local.get 0))))
  (func (export "div0") (param i32) (result i32) (i32.div_s (i32.const 1) (local.get 0)))
)`, calls: []call{
		{"i32", args(12345, 678)}, {"i64", args(1<<40, 77)}, {"float", args(0x4045000000000000)},
		{"convert", args(0xc0c3880000000000)}, {"convert", args(0x7ff0000000000000)}, {"signext", args(0x8f80)},
		{"reinterpret", args(0x123456789)}, {"div0", args(0)}, {"div0", args(3)},
	}},
	{name: "memory", src: `(module
  (memory (export "memory") 1 4)
  (data (i32.const 16) "hello, fuel")
  (data $later "passive data")
  (func (export "loads") (result i64)
    (i64.add (i64.load offset=16 (i32.const 0))
      (i64.add (i64.load8_s offset=3 align=1 (i32.const 16)) (i64.extend_i32_u (i32.load16_u (i32.const 17))))))
  (func (export "stores") (param i32)
    (i32.store offset=100 (i32.const 4) (local.get 0))
    (i64.store8 (i32.const 200) (i64.const 0x1ff))
    (f32.store (i32.const 204) (f32.const 3.25))
    (f64.store align=8 (i32.const 208) (f64.const -2.5)))
  (func (export "grow") (result i32)
    (i32.add (memory.grow (i32.const 1)) (i32.mul (memory.size) (i32.const 100))))
  (func (export "bulk")
    (memory.init $later (i32.const 300) (i32.const 2) (i32.const 8))
    (data.drop $later)
    (memory.copy (i32.const 400) (i32.const 16) (i32.const 11))
    (memory.fill (i32.const 500) (i32.const 0x2a) (i32.const 32)))
  (func (export "oob") (result i32) (i32.load (i32.const 0x7ffffff0)))
)`, calls: []call{{"loads", nil}, {"stores", args(0xdeadbeef)}, {"grow", nil}, {"bulk", nil}, {"bulk", nil}, {"oob", nil}}},
	{name: "references", src: `(module
  (type $v2i (func (result i32)))
  (table $f 2 8 funcref)
  (table $e 2 externref)
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (elem (table $f) (i32.const 0) func $one $two)
  (elem $pair funcref (ref.func $two) (ref.func $one))
  (func (export "tables") (result i32)
    (drop (table.grow $f (ref.null func) (i32.const 2)))
    (table.fill $f (i32.const 2) (ref.func $two) (i32.const 2))
    (table.copy $f $f (i32.const 0) (i32.const 2) (i32.const 1))
    (table.init $f $pair (i32.const 1) (i32.const 0) (i32.const 2))
    (elem.drop $pair)
    (i32.add (i32.mul (table.size $f) (i32.const 100))
      (i32.add (call_indirect $f (type $v2i) (i32.const 0))
        (i32.mul (i32.const 10) (call_indirect $f (type $v2i) (i32.const 1))))))
  (func (export "nulls") (result i32)
    (i32.add (ref.is_null (table.get $e (i32.const 0)))
      (ref.is_null (ref.null extern))))
  (func (export "set") (param externref) (result i32)
    (table.set $e (i32.const 1) (local.get 0))
    (ref.is_null (table.get $e (i32.const 1))))
)`, calls: []call{{"tables", nil}, {"nulls", nil}, {"set", args(0)}}},
	{name: "simd", src: `(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\00\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10\11\12\13\14\15\16\17\18\19\1a\1b\1c\1d\1e\1f")
  (func (export "lanes") (result i64)
    (local $v v128)
    (local.set $v (v128.load (i32.const 0)))
    (local.set $v (i8x16.shuffle 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0 (local.get $v) (v128.load offset=16 (i32.const 0))))
    (local.set $v (i32x4.replace_lane 2 (local.get $v) (i32.const 77)))
    (local.set $v (i32x4.add (local.get $v) (v128.const i32x4 1 2 3 4)))
    (local.set $v (v128.load32_lane 1 (i32.const 4) (local.get $v)))
    (v128.store64_lane 0 (i32.const 64) (local.get $v))
    (v128.store (i32.const 80) (i8x16.swizzle (local.get $v) (v128.load8_splat (i32.const 3))))
    (i64.add (i64x2.extract_lane 1 (local.get $v))
      (i64.add (i64.extend_i32_s (i8x16.extract_lane_s 3 (local.get $v)))
        (i64.add (i64.extend_i32_u (i16x8.extract_lane_u 1 (v128.load32_zero (i32.const 8))))
          (i64.extend_i32_u (v128.any_true (v128.load64_zero (i32.const 0))))))))
  (func (export "float") (result f64)
    (f64.add (f64x2.extract_lane 0 (f64x2.promote_low_f32x4 (f32x4.splat (f32.const 1.5))))
      (f32.demote_f64 (f64.const 0.25)) (f64.promote_f32)))
  (func (export "compare") (result i32)
    (i8x16.bitmask (i8x16.gt_s (v128.load (i32.const 0)) (i8x16.splat (i32.const 7)))))
)`, calls: []call{{"lanes", nil}, {"float", nil}, {"compare", nil}}},
	{name: "threads", flags: []string{"--enable-threads"}, features: []api.CoreFeatures{api.CoreFeaturesV2 | experimental.CoreFeaturesThreads}, src: `(module
  (memory (export "memory") 1 1 shared)
  (func (export "atomics") (result i32)
    (i32.atomic.store (i32.const 0) (i32.const 5))
    (drop (i32.atomic.rmw.add (i32.const 0) (i32.const 3)))
    (atomic.fence)
    (drop (i64.atomic.rmw.cmpxchg (i32.const 8) (i64.const 0) (i64.const 9)))
    (i32.add (i32.atomic.load (i32.const 0)) (i32.wrap_i64 (i64.atomic.load (i32.const 8)))))
)`, calls: []call{{"atomics", nil}}},
	{name: "globals", src: `(module
  (import "env" "triple" (func $triple (param i64) (result i64)))
  (global $g (export "g") (mut i64) (i64.const 5))
  (global $k i32 (i32.const 42))
  (global $f (export "f") (mut f64) (f64.const 1.5))
  (func (export "bump") (param i64) (result i64)
    (global.set $g (call $triple (i64.add (global.get $g) (local.get 0))))
    (global.set $f (f64.mul (global.get $f) (f64.const 2)))
    (i64.add (global.get $g) (i64.extend_i32_u (global.get $k))))
)`, calls: []call{{"bump", args(1)}, {"bump", args(2)}}},
}
