package policy

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Error is a policy error: where it is, what is wrong and, when a close
// name exists, what was probably meant. Parse and Check return *Error.
type Error struct {
	Name string // the source's name ("" when none was given)
	Pos  Pos    // byte offset into the source
	Line int    // 1-based
	Col  int    // 1-based, in runes
	Msg  string
	// Snippet is the offending source line, a newline, and a caret line
	// with '^' under the fault and '~' under the rest of its token.
	Snippet string
	// Suggestion is what the author probably meant ("" when nothing is close).
	Suggestion string
}

// Error formats the error as "name:line:col: msg (did you mean X?)"
// followed by the snippet on the next two lines.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%d:%d: %s", e.Line, e.Col, e.Msg)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", e.Suggestion)
	}
	if e.Snippet != "" {
		b.WriteByte('\n')
		b.WriteString(e.Snippet)
	}
	return b.String()
}

// newError builds an Error at pos in src.
func newError(src *source, pos Pos, suggestion, format string, args ...any) *Error {
	e := &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Suggestion: suggestion, Line: 1, Col: 1}
	if src == nil {
		return e
	}
	e.Name = src.name
	text := src.text
	if int(pos) > len(text) {
		pos = Pos(len(text))
		e.Pos = pos
	}
	if pos < 0 {
		pos = 0
		e.Pos = 0
	}
	lineStart := strings.LastIndexByte(text[:pos], '\n') + 1
	lineEnd := strings.IndexByte(text[pos:], '\n')
	if lineEnd < 0 {
		lineEnd = len(text)
	} else {
		lineEnd += int(pos)
	}
	e.Line = 1 + strings.Count(text[:lineStart], "\n")
	e.Col = 1 + utf8.RuneCountInString(text[lineStart:pos])
	line := strings.TrimRight(text[lineStart:lineEnd], "\r")
	var caret strings.Builder
	for _, r := range text[lineStart:pos] {
		if r == '\t' {
			caret.WriteByte('\t') // keep tabs so the caret lines up
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	if n := utf8.RuneCountInString(tokenAt(text, pos)); n > 1 {
		caret.WriteString(strings.Repeat("~", n-1))
	}
	e.Snippet = line + "\n" + caret.String()
	return e
}

// tokenAt returns the text of the token starting at pos, for the caret's
// underline; "" at the end of input or of a line.
func tokenAt(text string, pos Pos) string {
	if int(pos) >= len(text) {
		return ""
	}
	l := &lexer{input: text, pos: pos, start: pos, state: lexText}
	it := l.nextItem()
	switch it.typ {
	case itemEOF, itemNewline, itemError:
		return ""
	}
	if it.pos != pos {
		return "" // pos was inside whitespace or a token
	}
	return text[it.pos:it.end]
}

// suggest returns the candidate closest to word: an exact match ignoring
// case, else the smallest Damerau-Levenshtein distance (at most 2, at most
// 1 for words of three letters or fewer), else a candidate that word is a
// prefix of (or that is a prefix of word), at least three letters long.
// Ties go to the alphabetically first candidate.
func suggest(word string, candidates []string) string {
	if word == "" || len(candidates) == 0 {
		return ""
	}
	cands := append([]string(nil), candidates...)
	sort.Strings(cands)
	lw := strings.ToLower(word)
	for _, c := range cands {
		if strings.ToLower(c) == lw {
			return c
		}
	}
	limit := 2
	if utf8.RuneCountInString(word) <= 3 {
		limit = 1
	}
	// Distance ignoring case decides; distance with case breaks ties, so
	// that "t9" suggests "t1" rather than "T1".
	best, bestD, bestCase := "", limit+1, 0
	for _, c := range cands {
		d := editDistance(lw, strings.ToLower(c))
		if d > limit {
			continue
		}
		if dc := editDistance(word, c); d < bestD || d == bestD && dc < bestCase {
			best, bestD, bestCase = c, d, dc
		}
	}
	if best != "" {
		return best
	}
	if len(lw) >= 3 {
		for _, c := range cands {
			lc := strings.ToLower(c)
			if len(lc) >= 3 && (strings.HasPrefix(lc, lw) || strings.HasPrefix(lw, lc)) {
				return c
			}
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment Damerau-Levenshtein
// distance over runes: insertions, deletions, substitutions and
// transpositions of adjacent runes each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		// Names this long are never typos of each other worth suggesting,
		// and the quadratic table is not worth filling.
		if a == b {
			return 0
		}
		return 1 << 20
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
