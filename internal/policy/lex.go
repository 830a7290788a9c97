package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// itemType identifies the kind of a lexed item.
type itemType int

const (
	itemError   itemType = iota // val holds the message
	itemEOF                     // end of input
	itemNewline                 // end of a policy's line
	itemWord                    // identifier or keyword
	itemNumber                  // digits[.digits][unit]
	itemString                  // "..."; val is unquoted
	itemColon
	itemComma
	itemLParen
	itemRParen
	itemOp // < <= > >= = == !=
)

// item is a token with its position. end is the offset just past it.
type item struct {
	typ itemType
	pos Pos
	end Pos
	val string
}

const eof = -1

// stateFn is one state of the lexer; it returns the next.
type stateFn func(*lexer) stateFn

// lexer is a state machine over input, run synchronously: nextItem runs
// states until one emits an item.
type lexer struct {
	input string
	start Pos // start of the item being scanned
	pos   Pos // current offset
	width Pos // width of the last rune read
	items []item
	state stateFn
	// contin is set after a ',' (or a '\' line end) so that the next line
	// continues the policy; any other item clears it.
	contin bool
}

func lex(input string) *lexer {
	return &lexer{input: input, state: lexText}
}

// nextItem returns the next item; after itemEOF or itemError it keeps
// returning itemEOF.
func (l *lexer) nextItem() item {
	for len(l.items) == 0 {
		if l.state == nil {
			return item{typ: itemEOF, pos: Pos(len(l.input)), end: Pos(len(l.input))}
		}
		l.state = l.state(l)
	}
	it := l.items[0]
	l.items = l.items[1:]
	return it
}

func (l *lexer) next() rune {
	if int(l.pos) >= len(l.input) {
		l.width = 0
		return eof
	}
	r, w := utf8.DecodeRuneInString(l.input[l.pos:])
	l.width = Pos(w)
	l.pos += l.width
	return r
}

func (l *lexer) backup() { l.pos -= l.width }

func (l *lexer) peek() rune {
	r := l.next()
	l.backup()
	return r
}

func (l *lexer) emit(t itemType) {
	l.emitVal(t, l.input[l.start:l.pos])
}

func (l *lexer) emitVal(t itemType, val string) {
	l.items = append(l.items, item{typ: t, pos: l.start, end: l.pos, val: val})
	if t != itemNewline {
		l.contin = t == itemComma
	}
	l.start = l.pos
}

func (l *lexer) ignore() { l.start = l.pos }

// errorf emits an error item at the start of the current item and stops.
func (l *lexer) errorf(format string, args ...any) stateFn {
	l.items = append(l.items, item{typ: itemError, pos: l.start, end: l.pos, val: fmt.Sprintf(format, args...)})
	return nil
}

func lexText(l *lexer) stateFn {
	for {
		r := l.next()
		switch {
		case r == eof:
			l.emit(itemEOF)
			return nil
		case r == ' ' || r == '\t' || r == '\r':
			l.ignore()
		case r == '\n':
			if l.contin {
				l.ignore()
			} else {
				l.emit(itemNewline)
			}
		case r == '#':
			return lexComment
		case r == '\\':
			return lexContinuation
		case r == '"':
			return lexString
		case r == ',':
			l.emit(itemComma)
		case r == ':':
			l.emit(itemColon)
		case r == '(':
			l.emit(itemLParen)
		case r == ')':
			l.emit(itemRParen)
		case r == '<' || r == '>' || r == '=':
			if l.peek() == '=' {
				l.next()
			}
			l.emitOp()
		case r == '!':
			if l.next() != '=' {
				l.backup()
				return l.errorf("unexpected '!' (only != is an operator)")
			}
			l.emitOp()
		case isWordRune(r):
			l.backup()
			return lexWord
		default:
			if r == utf8.RuneError && l.width == 1 {
				return l.errorf("invalid UTF-8")
			}
			return l.errorf("unexpected character %q", r)
		}
		if len(l.items) > 0 {
			return lexText
		}
	}
}

func (l *lexer) emitOp() {
	v := l.input[l.start:l.pos]
	if v == "==" {
		v = "="
	}
	l.emitVal(itemOp, v)
}

// lexComment skips to the end of the line, leaving the newline.
func lexComment(l *lexer) stateFn {
	i := strings.IndexByte(l.input[l.pos:], '\n')
	if i < 0 {
		l.pos = Pos(len(l.input))
	} else {
		l.pos += Pos(i)
	}
	l.ignore()
	return lexText
}

// lexContinuation handles '\' at the end of a line: the line break is
// skipped. Anything but blanks or a comment between '\' and the line end
// is an error.
func lexContinuation(l *lexer) stateFn {
	for {
		switch r := l.next(); r {
		case ' ', '\t', '\r':
		case '\n', eof:
			l.ignore()
			l.contin = true // like a trailing ',', skip blank lines too
			return lexText
		case '#':
			l.backup()
			l.ignore()
			l.contin = true
			return lexComment
		default:
			return l.errorf("'\\' continues a policy on the next line and must end its line")
		}
	}
}

// lexString scans a double-quoted string; \" and \\ (and \ before any
// other character) escape.
func lexString(l *lexer) stateFn {
	var b strings.Builder
	for {
		switch r := l.next(); r {
		case '\\':
			r2 := l.next()
			if r2 == eof || r2 == '\n' {
				return l.errorf("unterminated string")
			}
			b.WriteRune(r2)
		case '"':
			l.emitVal(itemString, b.String())
			return lexText
		case eof, '\n':
			return l.errorf("unterminated string")
		default:
			if r == utf8.RuneError && l.width == 1 {
				return l.errorf("invalid UTF-8 in string")
			}
			b.WriteRune(r)
		}
	}
}

func lexWord(l *lexer) stateFn {
	for isWordRune(l.next()) {
	}
	if l.width > 0 {
		l.backup()
	}
	w := l.input[l.start:l.pos]
	if isNumberWord(w) {
		l.emit(itemNumber)
	} else {
		l.emit(itemWord)
	}
	return lexText
}

const wordPunct = "_-./*?%[]^+@~"

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.IndexByte(wordPunct, byte(r)) >= 0
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == 'µ')
}

// isNumberWord reports whether w reads as digits[.digits][unit], the unit
// being letters, '/' and '%'.
func isNumberWord(w string) bool {
	i := 0
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(w) && w[i] == '.' {
		j := i + 1
		for j < len(w) && w[j] >= '0' && w[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	for _, r := range w[i:] {
		if !(unicode.IsLetter(r) || r == '/' || r == '%') {
			return false
		}
	}
	return true
}
