//go:build wasip1

package main

import "encoding/json"

// userSchema is the form of test_elicitation.
var userSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"username": {"type": "string", "description": "User's response"},
		"email": {"type": "string", "description": "User's email address"}
	},
	"required": ["username", "email"]
}`)

// defaultsSchema is the form of test_elicitation_sep1034_defaults: a
// default value for each primitive type.
var defaultsSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "description": "User name", "default": "John Doe"},
		"age": {"type": "integer", "description": "User age", "default": 30},
		"score": {"type": "number", "description": "User score", "default": 95.5},
		"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
		"verified": {"type": "boolean", "description": "Verification status", "default": true}
	},
	"required": []
}`)

// enumsSchema is the form of test_elicitation_sep1330_enums: the five
// enum variants of SEP-1330.
var enumsSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"untitledSingle": {
			"type": "string",
			"description": "Untitled single-select enum",
			"enum": ["option1", "option2", "option3"]
		},
		"titledSingle": {
			"type": "string",
			"description": "Titled single-select enum",
			"oneOf": [
				{"const": "value1", "title": "First Option"},
				{"const": "value2", "title": "Second Option"},
				{"const": "value3", "title": "Third Option"}
			]
		},
		"legacyEnum": {
			"type": "string",
			"description": "Legacy titled enum (enumNames is deprecated)",
			"enum": ["opt1", "opt2", "opt3"],
			"enumNames": ["Option One", "Option Two", "Option Three"]
		},
		"untitledMulti": {
			"type": "array",
			"description": "Untitled multi-select enum",
			"items": {"type": "string", "enum": ["option1", "option2", "option3"]}
		},
		"titledMulti": {
			"type": "array",
			"description": "Titled multi-select enum",
			"items": {
				"anyOf": [
					{"const": "value1", "title": "First Choice"},
					{"const": "value2", "title": "Second Choice"},
					{"const": "value3", "title": "Third Choice"}
				]
			}
		}
	},
	"required": []
}`)
