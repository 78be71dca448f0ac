;; badcall.wat: like garbage.wat, but with a valid describe, so that a host
;; lists its tool and a test can call it.
;;
;; describe outputs, verbatim:
;;   {"tools":[{"name":"badcall","description":"Answers with bytes that are not JSON","inputSchema":{"type":"object","properties":{}}}]}
;; call outputs the 12 bytes ff fe 7b 20 6e 6f 74 20 6a 73 6f 6e, that is
;; two bytes of invalid UTF-8 followed by "{ not json", and returns 0.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"badcall\",\"description\":\"Answers with bytes that are not JSON\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}]}\00")
  (data (i32.const 1024) "\ff\fe{ not json\00")

  ;; strlen of the NUL-terminated string at $p.
  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $n))

  ;; Copy $len bytes of linear memory at $p to Extism memory at $dst.
  (func $put (param $dst i64) (param $p i32) (param $len i32)
    (local $k i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $dst) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (local.get $p) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l))))

  ;; Set the output to the NUL-terminated string at $p.
  (func $output_cstr (param $p i32)
    (local $len i32) (local $off i64)
    (local.set $len (call $strlen (local.get $p)))
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (call $put (local.get $off) (local.get $p) (local.get $len))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (call $output_cstr (i32.const 1024))
    (i32.const 0))
)
