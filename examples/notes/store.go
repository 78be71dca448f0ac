//go:build wasip1

package main

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// note is one note of the store.
type note struct {
	ID      string
	Title   string
	Text    string
	Created time.Time
}

// store keeps notes in the memory of the plugin instance.
type store struct {
	notes  map[string]*note
	lastID int
}

func newStore() *store {
	return &store{notes: make(map[string]*note)}
}

// add stores a new note and returns it.
func (s *store) add(title, text string) *note {
	s.lastID++
	n := &note{ID: strconv.Itoa(s.lastID), Title: title, Text: text, Created: time.Now().UTC()}
	s.notes[n.ID] = n
	return n
}

// get returns the note with the given id, or nil.
func (s *store) get(id string) *note {
	return s.notes[id]
}

// remove deletes the note with the given id and reports whether it
// existed.
func (s *store) remove(id string) bool {
	_, ok := s.notes[id]
	delete(s.notes, id)
	return ok
}

// list returns the notes in creation order.
func (s *store) list() []*note {
	notes := make([]*note, 0, len(s.notes))
	for _, n := range s.notes {
		notes = append(notes, n)
	}
	slices.SortFunc(notes, func(a, b *note) int {
		ai, _ := strconv.Atoi(a.ID)
		bi, _ := strconv.Atoi(b.ID)
		return ai - bi
	})
	return notes
}

// idsWithPrefix returns the ids of the notes that start with prefix, in
// creation order.
func (s *store) idsWithPrefix(prefix string) []string {
	var ids []string
	for _, n := range s.list() {
		if strings.HasPrefix(n.ID, prefix) {
			ids = append(ids, n.ID)
		}
	}
	return ids
}
