;; mirror_servlet.wat: a servlet-interface Extism module that outputs whatever the host
;; put in its variable "out" (Extism var_get), or, when that variable is not
;; set, its config value "out" (config_get); with neither, it outputs
;; nothing. Every export does the same and returns 0, so tests can feed any
;; bytes to the host's decoding of every kind of plugin output.
;;
;; Exports: describe, call, list_resources, list_resource_templates, read_resource.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))

  (memory (export "memory") 1)

  ;; The key "out" in Extism memory.
  (func $key (result i64)
    (local $k i64)
    (local.set $k (call $alloc (i64.const 3)))
    (call $store_u8 (local.get $k) (i32.const 111))
    (call $store_u8 (i64.add (local.get $k) (i64.const 1)) (i32.const 117))
    (call $store_u8 (i64.add (local.get $k) (i64.const 2)) (i32.const 116))
    (local.get $k))

  (func $mirror (result i32)
    (local $off i64)
    (local.set $off (call $var_get (call $key)))
    (if (i64.eqz (local.get $off))
      (then (local.set $off (call $config_get (call $key)))))
    (if (i64.ne (local.get $off) (i64.const 0))
      (then (call $output_set (local.get $off) (call $length (local.get $off)))))
    (i32.const 0))
  (func (export "describe") (result i32) (call $mirror))
  (func (export "call") (result i32) (call $mirror))
  (func (export "list_resources") (result i32) (call $mirror))
  (func (export "list_resource_templates") (result i32) (call $mirror))
  (func (export "read_resource") (result i32) (call $mirror))
)
