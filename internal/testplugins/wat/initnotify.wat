;; initnotify.wat: a legacy-interface module (describe and call) whose
;; _initialize calls notify_tool_list_changed, as a Go plugin's init
;; function might. Extism runs _initialize at the start of an instance's
;; first call. Its one tool, "ping", answers "pong" and notifies nothing.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/user" "notify_tool_list_changed" (func $notify_tool_list_changed))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"ping\",\"description\":\"Answers pong\",\"inputSchema\":{\"type\":\"object\"}}]}\00")
  (data (i32.const 1024) "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}\00")

  ;; Set the output to the NUL-terminated string at $p.
  (func $output_cstr (param $p i32)
    (local $len i32) (local $off i64) (local $k i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $len)))))
        (local.set $len (i32.add (local.get $len) (i32.const 1)))
        (br $l)))
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

  (func (export "_initialize") (call $notify_tool_list_changed))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (call $output_cstr (i32.const 1024))
    (i32.const 0))
)
