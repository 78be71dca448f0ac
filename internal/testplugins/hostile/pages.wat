;; pages.wat: a v1-interface Extism module whose list_tools never ends: each
;; call spins for a while (two million loop iterations), then answers
;; one page with one tool and a new cursor:
;;   {"tools":[{"name":"t<N>","inputSchema":{"type":"object"}}],"nextCursor":"c<N>"}
;; where N counts the calls of this instance (1, 2, ...). A host that follows
;; cursors without bounds lists forever.
;;
;; call_tool outputs {"content":[{"type":"text","text":"ok"}]}. The other v1
;; exports are absent.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"t\00")
  (data (i32.const 640) "\",\"inputSchema\":{\"type\":\"object\"}}],\"nextCursor\":\"c\00")
  (data (i32.const 768) "\"}\00")
  (data (i32.const 1024) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
  ;; 2048: decimal digits of the counter; 4096: the page being built

  (global $count (mut i32) (i32.const 0))
  (global $sink (mut i64) (i64.const 0))

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

  ;; Append the NUL-terminated string at $p at $dst; returns the new end.
  (func $append (param $dst i32) (param $p i32) (result i32)
    (local $n i32)
    (local.set $n (call $strlen (local.get $p)))
    (memory.copy (local.get $dst) (local.get $p) (local.get $n))
    (i32.add (local.get $dst) (local.get $n)))

  ;; Write the decimal digits of $v, NUL-terminated, at 2048.
  (func $digits (param $v i32)
    (local $nd i32) (local $x i32) (local $k i32)
    (local.set $x (local.get $v))
    (loop $count
      (local.set $nd (i32.add (local.get $nd) (i32.const 1)))
      (local.set $x (i32.div_u (local.get $x) (i32.const 10)))
      (br_if $count (local.get $x)))
    (local.set $x (local.get $v))
    (local.set $k (local.get $nd))
    (loop $digit
      (local.set $k (i32.sub (local.get $k) (i32.const 1)))
      (i32.store8 (i32.add (i32.const 2048) (local.get $k))
        (i32.add (i32.const 48) (i32.rem_u (local.get $x) (i32.const 10))))
      (local.set $x (i32.div_u (local.get $x) (i32.const 10)))
      (br_if $digit (local.get $k)))
    (i32.store8 (i32.add (i32.const 2048) (local.get $nd)) (i32.const 0)))

  (func (export "list_tools") (result i32)
    (local $i i64) (local $end i32)
    (block $done
      (loop $spin
        (br_if $done (i64.ge_u (local.get $i) (i64.const 2000000)))
        (global.set $sink (i64.add (global.get $sink) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $spin)))
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (call $digits (global.get $count))
    (local.set $end (call $append (i32.const 4096) (i32.const 512)))
    (local.set $end (call $append (local.get $end) (i32.const 2048)))
    (local.set $end (call $append (local.get $end) (i32.const 640)))
    (local.set $end (call $append (local.get $end) (i32.const 2048)))
    (local.set $end (call $append (local.get $end) (i32.const 768)))
    (i32.store8 (local.get $end) (i32.const 0))
    (call $output_cstr (i32.const 4096))
    (i32.const 0))

  (func (export "call_tool") (result i32)
    (call $output_cstr (i32.const 1024))
    (i32.const 0))
)
