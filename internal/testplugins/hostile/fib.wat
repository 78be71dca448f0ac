;; fib.wat: a legacy-interface Extism module whose call computes a
;; Fibonacci number by plain recursion: no loop anywhere on its path, so a
;; guard that only checks loop heads never sees it, and fib(100) takes
;; longer than the universe is old.
;;
;; describe outputs, verbatim:
;;   {"tools":[{"name":"fib","description":"Recursive Fibonacci, without end","inputSchema":{"type":"object"}}]}
;; call never returns in time and produces no output.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"fib\",\"description\":\"Recursive Fibonacci, without end\",\"inputSchema\":{\"type\":\"object\"}}]}\00")

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

  (func $fib (param $n i64) (result i64)
    (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
      (then (local.get $n))
      (else
        (i64.add
          (call $fib (i64.sub (local.get $n) (i64.const 1)))
          (call $fib (i64.sub (local.get $n) (i64.const 2)))))))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (drop (call $fib (i64.const 100)))
    (i32.const 0))
)
