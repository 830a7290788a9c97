package sql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error is a query error with S3 Select's error code and, for syntax
// errors, the 1-based line and column where it was found.
type Error struct {
	Code    string
	Message string
	Line    int
	Col     int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s at line %d, column %d", e.Message, e.Line, e.Col)
	}
	return e.Message
}

// S3 Select's error codes for queries.
const (
	CodeParseUnexpectedToken       = "ParseUnexpectedToken"
	CodeParseExpectedExpression    = "ParseExpectedExpression"
	CodeParseUnexpectedOperator    = "ParseUnexpectedOperator"
	CodeParseInvalidPathComponent  = "ParseInvalidPathComponent"
	CodeParseExpectedTokenType     = "ParseExpectedTokenType"
	CodeParseUnknownOperator       = "ParseUnknownOperator"
	CodeParseUnsupportedSyntax     = "ParseUnsupportedSyntax"
	CodeLexerInvalidChar           = "LexerInvalidChar"
	CodeLexerInvalidLiteral        = "LexerInvalidLiteral"
	CodeParseExpectedNumber        = "ParseExpectedNumber"
	CodeParseExpectedKeyword       = "ParseExpectedKeyword"
	CodeInvalidColumnIndex         = "InvalidColumnIndex"
	CodeUnsupportedFunction        = "UnsupportedFunction"
	CodeIncorrectSQLFunctionArgs   = "IncorrectSqlFunctionArgumentType"
	CodeEvaluatorInvalidArguments  = "EvaluatorInvalidArguments"
	CodeInvalidDataType            = "InvalidDataType"
	CodeCastFailed                 = "CastFailed"
	CodeUnsupportedSQLStructure    = "UnsupportedSqlStructure"
	CodeMissingHeaders             = "MissingHeaders"
	CodeUnsupportedSQLOperation    = "UnsupportedSqlOperation"
	CodeInvalidTextEncoding        = "InvalidTextEncoding"
	CodeEvaluatorInvalidTimestamp  = "EvaluatorInvalidTimestampFormatPattern"
	CodeIllegalSQLFunctionArgument = "IllegalSqlFunctionArgument"
)

func errAt(code string, p pos, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Line: p.line, Col: p.col}
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent
	tString
	tInt
	tFloat
	tOp    // = != <> < <= > >= + - * / % || ( ) , . [ ] ;
	tIonTS // `2020-01-01T` timestamp literal
)

type pos struct{ line, col int }

type token struct {
	kind tokKind
	text string // ident (as written), unquoted string, number text, operator
	pos  pos
}

// keyword reports whether t is the (case-insensitive) keyword kw.
func (t token) keyword(kw string) bool {
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (t token) op(o string) bool { return t.kind == tOp && t.text == o }

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return "'" + t.text + "'"
	case tQuotedIdent:
		return `"` + t.text + `"`
	}
	return t.text
}

// lex splits a query into tokens.
func lex(src string) ([]token, error) {
	var toks []token
	line, lineStart := 1, 0
	at := func(i int) pos { return pos{line, utf8.RuneCountInString(src[lineStart:i]) + 1} }
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			lineStart = i
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, token{tIdent, src[i:j], at(i)})
			i = j
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j, kind := i, tInt
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			if j < len(src) && src[j] == '.' {
				kind = tFloat
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					kind = tFloat
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if j < len(src) && isIdentStart(src[j]) {
				return nil, errAt(CodeLexerInvalidLiteral, at(i), "invalid numeric literal %q", src[i:j+1])
			}
			toks = append(toks, token{kind, src[i:j], at(i)})
			i = j
			continue
		case c == '\'' || c == '"' || c == '`':
			p := at(i)
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(src) {
				if src[j] == c {
					if c != '`' && j+1 < len(src) && src[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				if src[j] == '\n' {
					line++
					lineStart = j + 1
				}
				b.WriteByte(src[j])
				j++
			}
			if !closed {
				return nil, errAt(CodeLexerInvalidLiteral, p, "unterminated literal starting with %c", c)
			}
			kind := map[byte]tokKind{'\'': tString, '"': tQuotedIdent, '`': tIonTS}[c]
			toks = append(toks, token{kind, b.String(), p})
			i = j
			continue
		}
		p := at(i)
		if i+1 < len(src) {
			switch two := src[i : i+2]; two {
			case "!=", "<>", "<=", ">=", "||":
				toks = append(toks, token{tOp, two, p})
				i += 2
				continue
			}
		}
		if strings.IndexByte("=<>+-*/%(),.[];", c) >= 0 {
			toks = append(toks, token{tOp, src[i : i+1], p})
			i++
			continue
		}
		r, _ := utf8.DecodeRuneInString(src[i:])
		return nil, errAt(CodeLexerInvalidChar, p, "invalid character %q", r)
	}
	toks = append(toks, token{tEOF, "", at(len(src))})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
