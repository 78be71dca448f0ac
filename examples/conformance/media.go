//go:build wasip1

package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
)

// redPixelPNG returns a 1x1 red PNG image.
func redPixelPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return buf.Bytes()
}

// toneWAV returns a 50 ms, 440 Hz tone as an 8 kHz, 8-bit mono PCM WAV
// file.
func toneWAV() []byte {
	const (
		sampleRate = 8000
		samples    = sampleRate / 20
	)
	pcm := make([]byte, samples)
	for i := range pcm {
		pcm[i] = byte(128 + 100*math.Sin(2*math.Pi*440*float64(i)/sampleRate))
	}
	var buf bytes.Buffer
	write := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	write(uint32(36 + len(pcm)))
	buf.WriteString("WAVEfmt ")
	write(uint32(16))         // fmt chunk size
	write(uint16(1))          // PCM
	write(uint16(1))          // mono
	write(uint32(sampleRate)) // sample rate
	write(uint32(sampleRate)) // byte rate: 1 byte per sample
	write(uint16(1))          // block align
	write(uint16(8))          // bits per sample
	buf.WriteString("data")
	write(uint32(len(pcm)))
	buf.Write(pcm)
	return buf.Bytes()
}
