;; chain.wat: a legacy-interface Extism module whose call runs a deep
;; chain of calls without a loop: $deep(n) calls $deep(n-1) twice, so the
;; stack holds thousands of frames and the call makes 2^n of them; the
;; second call of each pair goes through call_indirect.
;;
;; describe outputs, verbatim:
;;   {"tools":[{"name":"chain","description":"A deep chain of calls, without end","inputSchema":{"type":"object"}}]}
;; call never returns in time and produces no output.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"chain\",\"description\":\"A deep chain of calls, without end\",\"inputSchema\":{\"type\":\"object\"}}]}\00")

  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $n))

  (func $output_cstr (param $p i32)
    (local $len i32) (local $off i64) (local $k i32)
    (local.set $len (call $strlen (local.get $p)))
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (local.get $p) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))

  (type $i2v (func (param i32)))
  (table 1 funcref)
  (elem (i32.const 0) $deep)

  (func $deep (param $n i32)
    (if (local.get $n)
      (then
        (call $deep (i32.sub (local.get $n) (i32.const 1)))
        (call_indirect (type $i2v) (i32.sub (local.get $n) (i32.const 1)) (i32.const 0)))))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (call $deep (i32.const 3000))
    (i32.const 0))
)
