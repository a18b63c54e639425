//! Just enough SQL to compare the rules of the two migration sets: a tokenizer, an
//! expression parser whose printed form is the same for one rule however each backend
//! spells it (spacing, casts, parentheses, quoting, `IN` lists), and the parts of a
//! `CREATE TRIGGER` that say when a trigger fires and what it writes.

use std::collections::BTreeSet;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    /// A keyword or an unquoted identifier, lowercased (both backends fold them).
    Word(String),
    /// A double-quoted identifier, as written.
    Quoted(String),
    /// A string literal's content.
    Str(String),
    Num(String),
    Sym(String),
}

impl Token {
    fn is_word(&self, word: &str) -> bool {
        matches!(self, Token::Word(w) if w == word)
    }

    fn is_sym(&self, sym: &str) -> bool {
        matches!(self, Token::Sym(s) if s == sym)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Word(w) | Token::Num(w) | Token::Sym(w) => f.write_str(w),
            Token::Quoted(q) => write!(f, "\"{q}\""),
            Token::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

/// The tokens of SQL text (or of a PL/pgSQL body), comments left out.
pub fn tokens(sql: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && at(i + 1) == '-' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '\'' || c == '"' {
            // A quote inside is written twice.
            let mut text = String::new();
            i += 1;
            loop {
                if i >= chars.len() {
                    return Err(format!("unterminated {c} in {sql:?}"));
                }
                if chars[i] == c {
                    if at(i + 1) == c {
                        text.push(c);
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                text.push(chars[i]);
                i += 1;
            }
            out.push(if c == '\'' {
                Token::Str(text)
            } else {
                Token::Quoted(text)
            });
        } else if c.is_ascii_digit() {
            let start = i;
            while at(i).is_ascii_digit() || at(i) == '.' {
                i += 1;
            }
            out.push(Token::Num(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' || at(i) == '$' {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(Token::Word(word.to_lowercase()));
        } else {
            let pair: String = [c, at(i + 1)].iter().collect();
            if ["::", ":=", "<=", ">=", "<>", "!=", "==", "||"].contains(&pair.as_str()) {
                out.push(Token::Sym(pair));
                i += 2;
            } else {
                out.push(Token::Sym(c.to_string()));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// An expression as a tree: equal trees are the same rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Column(Vec<String>),
    Literal(String),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(Box<Expr>, String, Box<Expr>),
    In(Box<Expr>, bool, Vec<Expr>),
    IsNull(Box<Expr>, bool),
    Call(String, Vec<Expr>),
    /// PostgreSQL's `ARRAY[...]`, only ever the right side of `= ANY` (an `IN` list).
    Array(Vec<Expr>),
}

/// Printed with every compound part in parentheses, so that one tree prints one way.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |items: &[Expr]| {
            items
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Expr::Column(parts) => f.write_str(&parts.join(".")),
            Expr::Literal(text) => f.write_str(text),
            Expr::Not(e) => write!(f, "(NOT {e})"),
            Expr::Neg(e) => write!(f, "(-{e})"),
            Expr::Binary(l, op, r) => write!(f, "({l} {op} {r})"),
            Expr::In(e, negated, items) => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({e} {not}IN ({}))", list(items))
            }
            Expr::IsNull(e, negated) => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({e} IS {not}NULL)")
            }
            Expr::Call(name, args) => write!(f, "{name}({})", list(args)),
            Expr::Array(items) => write!(f, "ARRAY[{}]", list(items)),
        }
    }
}

/// The words that may follow PostgreSQL's `::` in a cast it prints.
const TYPE_WORDS: &[&str] = &[
    "text",
    "character",
    "varying",
    "varchar",
    "integer",
    "int",
    "bigint",
    "smallint",
    "numeric",
    "real",
    "double",
    "precision",
    "boolean",
    "jsonb",
    "json",
    "uuid",
    "bytea",
    "timestamp",
    "with",
    "without",
    "time",
    "zone",
];

/// Words that end an operand rather than name a column.
const KEYWORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "like", "between", "any", "all", "then", "else", "end", "when",
    "begin", "execute", "as", "from", "where", "select", "case",
];

/// Parses a whole expression; the text must hold nothing else.
pub fn expression(tokens: &[Token]) -> Result<Expr, String> {
    let mut parser = Parser { tokens, pos: 0 };
    let expr = parser.or()?;
    match parser.peek() {
        None => Ok(expr),
        Some(t) => Err(format!("unexpected {t} after {expr}")),
    }
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.pos + ahead)
    }

    fn next(&mut self) -> Result<Token, String> {
        let token = self.peek().cloned().ok_or("unexpected end")?;
        self.pos += 1;
        Ok(token)
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.peek().is_some_and(|t| t.is_word(word));
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_sym(&mut self, sym: &str) -> bool {
        let found = self.peek().is_some_and(|t| t.is_sym(sym));
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_word(&mut self, word: &str) -> Result<(), String> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(format!("expected {word}, found {:?}", self.peek()))
        }
    }

    fn expect_sym(&mut self, sym: &str) -> Result<(), String> {
        match self.next()? {
            t if t.is_sym(sym) => Ok(()),
            t => Err(format!("expected {sym}, found {t}")),
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.eat_word("or") {
            left = Expr::Binary(Box::new(left), "OR".into(), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.not()?;
        while self.eat_word("and") {
            left = Expr::Binary(Box::new(left), "AND".into(), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let left = self.additive()?;
        let op = match self.peek() {
            Some(Token::Sym(s))
                if ["=", "==", "<>", "!=", "<", "<=", ">", ">="].contains(&&**s) =>
            {
                match s.as_str() {
                    "==" => "=".to_owned(),
                    "!=" => "<>".to_owned(),
                    other => other.to_owned(),
                }
            }
            _ => return self.comparison_words(left),
        };
        self.pos += 1;
        // PostgreSQL prints `x IN (a, b)` as `x = ANY (ARRAY[a, b])`, and NOT IN as `<> ALL`.
        let quantifier = if self.eat_word("any") {
            Some("any")
        } else if self.eat_word("all") {
            Some("all")
        } else {
            None
        };
        let Some(quantifier) = quantifier else {
            return Ok(Expr::Binary(Box::new(left), op, Box::new(self.additive()?)));
        };
        self.expect_sym("(")?;
        let array = self.or()?;
        self.expect_sym(")")?;
        match (array, op.as_str(), quantifier) {
            (Expr::Array(items), "=", "any") => Ok(Expr::In(Box::new(left), false, items)),
            (Expr::Array(items), "<>", "all") => Ok(Expr::In(Box::new(left), true, items)),
            (array, _, _) => Err(format!("{op} {quantifier} ({array}) is not an IN list")),
        }
    }

    /// `IS [NOT] NULL`, `[NOT] IN (...)`, `[NOT] LIKE`, `[NOT] BETWEEN`, or nothing.
    fn comparison_words(&mut self, left: Expr) -> Result<Expr, String> {
        if self.eat_word("is") {
            let negated = self.eat_word("not");
            return match self.next()? {
                t if t.is_word("null") => Ok(Expr::IsNull(Box::new(left), negated)),
                t => Err(format!("IS {t} is not understood")),
            };
        }
        let negated = self.peek().is_some_and(|t| t.is_word("not"))
            && self
                .peek_at(1)
                .is_some_and(|t| t.is_word("in") || t.is_word("like") || t.is_word("between"));
        if negated {
            self.pos += 1;
        }
        let wrap = |e: Expr| if negated { Expr::Not(Box::new(e)) } else { e };
        if self.eat_word("in") {
            self.expect_sym("(")?;
            let items = self.list(")")?;
            return Ok(Expr::In(Box::new(left), negated, items));
        }
        if self.eat_word("like") {
            let pattern = self.additive()?;
            return Ok(wrap(Expr::Binary(
                Box::new(left),
                "LIKE".into(),
                Box::new(pattern),
            )));
        }
        if self.eat_word("between") {
            // PostgreSQL stores BETWEEN as the two comparisons it stands for.
            let low = self.additive()?;
            if !self.eat_word("and") {
                return Err("BETWEEN without AND".into());
            }
            let high = self.additive()?;
            let between = Expr::Binary(
                Box::new(Expr::Binary(
                    Box::new(left.clone()),
                    ">=".into(),
                    Box::new(low),
                )),
                "AND".into(),
                Box::new(Expr::Binary(Box::new(left), "<=".into(), Box::new(high))),
            );
            return Ok(wrap(between));
        }
        Ok(left)
    }

    fn list(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut items = Vec::new();
        if self.eat_sym(close) {
            return Ok(items);
        }
        loop {
            items.push(self.or()?);
            if self.eat_sym(close) {
                return Ok(items);
            }
            self.expect_sym(",")?;
        }
    }

    fn additive(&mut self) -> Result<Expr, String> {
        let mut left = self.multiplicative()?;
        while let Some(op) = self.binary_sym(&["+", "-", "||"]) {
            left = Expr::Binary(Box::new(left), op, Box::new(self.multiplicative()?));
        }
        Ok(left)
    }

    fn multiplicative(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while let Some(op) = self.binary_sym(&["*", "/", "%"]) {
            left = Expr::Binary(Box::new(left), op, Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn binary_sym(&mut self, ops: &[&str]) -> Option<String> {
        let op = ops
            .iter()
            .find(|op| self.peek().is_some_and(|t| t.is_sym(op)))?;
        self.pos += 1;
        Some((*op).to_owned())
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat_sym("-") {
            return Ok(match self.unary()? {
                Expr::Literal(n) if n.starts_with(|c: char| c.is_ascii_digit()) => {
                    Expr::Literal(format!("-{n}"))
                }
                e => Expr::Neg(Box::new(e)),
            });
        }
        if self.eat_sym("+") {
            return self.unary();
        }
        let expr = self.primary()?;
        // A cast PostgreSQL prints (`'open'::text`, `(0)::double precision`) is the
        // implicit conversion SQLite makes by the column's affinity: the rule is the same.
        while self.eat_sym("::") {
            self.cast_type()?;
        }
        Ok(expr)
    }

    fn cast_type(&mut self) -> Result<(), String> {
        let mut words = 0;
        while self
            .peek()
            .is_some_and(|t| TYPE_WORDS.iter().any(|w| t.is_word(w)))
        {
            self.pos += 1;
            words += 1;
        }
        if words == 0 {
            return Err(format!("unknown cast type {:?}", self.peek()));
        }
        if self.eat_sym("(") {
            while !self.eat_sym(")") {
                self.next()?;
            }
        }
        while self.eat_sym("[") {
            self.expect_sym("]")?;
        }
        Ok(())
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.next()? {
            Token::Num(n) => Ok(Expr::Literal(n)),
            t @ Token::Str(_) => Ok(Expr::Literal(t.to_string())),
            Token::Sym(s) if s == "(" => {
                let inner = self.or()?;
                self.expect_sym(")")?;
                Ok(inner)
            }
            Token::Word(w) if ["true", "false", "null"].contains(&w.as_str()) => {
                Ok(Expr::Literal(w.to_uppercase()))
            }
            Token::Word(w) if w == "array" && self.eat_sym("[") => Ok(Expr::Array(self.list("]")?)),
            Token::Word(w) if w == "cast" && self.eat_sym("(") => {
                let inner = self.or()?;
                if !self.eat_word("as") {
                    return Err("CAST without AS".into());
                }
                self.cast_type()?;
                self.expect_sym(")")?;
                Ok(inner)
            }
            Token::Word(w) if KEYWORDS.contains(&w.as_str()) => {
                Err(format!("{w} where an operand was expected"))
            }
            Token::Word(name) | Token::Quoted(name) => {
                if self.eat_sym("(") {
                    return Ok(Expr::Call(name.to_lowercase(), self.list(")")?));
                }
                let mut parts = vec![name];
                while self.eat_sym(".") {
                    match self.next()? {
                        Token::Word(part) | Token::Quoted(part) => parts.push(part),
                        t => return Err(format!("{t} after a dot")),
                    }
                }
                Ok(Expr::Column(parts))
            }
            t => Err(format!("{t} where an operand was expected")),
        }
    }
}

/// The expression of every `CHECK (...)` in a `CREATE TABLE` statement, column and table
/// constraints alike, as token lists.
pub fn checks(create_table: &[Token]) -> Result<Vec<Vec<Token>>, String> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < create_table.len() {
        if create_table[i].is_word("check")
            && create_table.get(i + 1).is_some_and(|t| t.is_sym("("))
        {
            let (inner, end) = parenthesised(create_table, i + 1)?;
            found.push(inner.to_vec());
            i = end;
        } else {
            i += 1;
        }
    }
    Ok(found)
}

/// The tokens inside the parentheses opening at `open`, and the index after the closing one.
fn parenthesised(tokens: &[Token], open: usize) -> Result<(&[Token], usize), String> {
    let mut depth = 0;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if t.is_sym("(") {
            depth += 1;
        } else if t.is_sym(")") {
            depth -= 1;
            if depth == 0 {
                return Ok((&tokens[open + 1..i], i + 1));
            }
        }
    }
    Err("unbalanced parentheses".into())
}

/// When a trigger fires, read from its `CREATE TRIGGER` text: SQLite's as written,
/// PostgreSQL's as `pg_get_triggerdef` prints it.
#[derive(Debug, PartialEq)]
pub struct TriggerHead {
    pub table: String,
    /// BEFORE, AFTER or INSTEAD OF.
    pub timing: String,
    /// Each event on its own (`INSERT`, `UPDATE`, `UPDATE OF status`, `DELETE`).
    pub events: Vec<String>,
    /// PostgreSQL's constraint triggers can wait for the commit.
    pub deferred: bool,
    /// ROW or STATEMENT.
    pub each: String,
    pub when: Option<Expr>,
    /// SQLite: the statements between BEGIN and END. PostgreSQL: none (its body is the
    /// function's source, read apart).
    pub body: Vec<Token>,
}

pub fn trigger(sql: &str) -> Result<TriggerHead, String> {
    let tokens = tokens(sql)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
    };
    p.expect_word("create")?;
    p.eat_word("constraint");
    let _ = p.eat_word("temp") || p.eat_word("temporary");
    p.expect_word("trigger")?;
    if p.eat_word("if") {
        p.expect_word("not")?;
        p.expect_word("exists")?;
    }
    qualified_name(&mut p)?;
    // SQLite's default timing is BEFORE.
    let timing = if p.eat_word("after") {
        "AFTER"
    } else if p.eat_word("instead") {
        p.expect_word("of")?;
        "INSTEAD OF"
    } else {
        p.eat_word("before");
        "BEFORE"
    };
    let mut events = Vec::new();
    loop {
        let event = match p.next()? {
            Token::Word(w) if ["insert", "delete", "truncate"].contains(&w.as_str()) => {
                w.to_uppercase()
            }
            Token::Word(w) if w == "update" => {
                if p.eat_word("of") {
                    let mut columns = vec![qualified_name(&mut p)?];
                    while p.eat_sym(",") {
                        columns.push(qualified_name(&mut p)?);
                    }
                    columns.sort();
                    format!("UPDATE OF {}", columns.join(", "))
                } else {
                    "UPDATE".into()
                }
            }
            t => return Err(format!("unknown trigger event {t}")),
        };
        events.push(event);
        if !p.eat_word("or") {
            break;
        }
    }
    events.sort();
    p.expect_word("on")?;
    let table = qualified_name(&mut p)?;
    let mut deferred = false;
    let mut each = None;
    let mut when = None;
    let mut body = Vec::new();
    while let Some(token) = p.peek().cloned() {
        p.pos += 1;
        match token {
            Token::Word(w) if w == "deferrable" => {}
            Token::Word(w) if w == "not" => p.expect_word("deferrable")?,
            Token::Word(w) if w == "initially" => {
                deferred = p.eat_word("deferred");
                if !deferred {
                    p.expect_word("immediate")?;
                }
            }
            Token::Word(w) if w == "for" => {
                p.eat_word("each");
                each = Some(if p.eat_word("row") {
                    "ROW"
                } else {
                    p.expect_word("statement")?;
                    "STATEMENT"
                });
            }
            Token::Word(w) if w == "when" => {
                // SQLite's condition runs up to BEGIN; PostgreSQL's is parenthesised and
                // followed by EXECUTE.
                let start = p.pos;
                let mut depth = 0i32;
                while let Some(t) = p.peek() {
                    if depth == 0 && (t.is_word("begin") || t.is_word("execute")) {
                        break;
                    }
                    if t.is_sym("(") {
                        depth += 1;
                    } else if t.is_sym(")") {
                        depth -= 1;
                    }
                    p.pos += 1;
                }
                when = Some(expression(&tokens[start..p.pos])?);
            }
            Token::Word(w) if w == "begin" => {
                // Everything to the final END: SQLite trigger bodies hold no nested BEGIN.
                let rest = &tokens[p.pos..];
                match rest.split_last() {
                    Some((last, statements)) if last.is_word("end") => body = statements.to_vec(),
                    _ => return Err("trigger body without END".into()),
                }
                // SQLite's triggers all fire for each row.
                each.get_or_insert("ROW");
                break;
            }
            Token::Word(w) if w == "execute" => break,
            t => return Err(format!("{t} is not understood in a trigger's head")),
        }
    }
    Ok(TriggerHead {
        table,
        timing: timing.into(),
        events,
        deferred,
        each: each.ok_or("neither FOR EACH nor a body")?.into(),
        when,
        body,
    })
}

/// A possibly schema-qualified name: its last part (every table is in one schema).
fn qualified_name(p: &mut Parser) -> Result<String, String> {
    let mut name = match p.next()? {
        Token::Word(w) | Token::Quoted(w) => w,
        t => return Err(format!("{t} where a name was expected")),
    };
    while p.eat_sym(".") {
        name = match p.next()? {
            Token::Word(w) | Token::Quoted(w) => w,
            t => return Err(format!("{t} where a name was expected")),
        };
    }
    Ok(name)
}

/// What a trigger body writes, as `table.column` (and `table (insert)`,
/// `table (delete)`): `UPDATE t SET a = ..., b = ...`, `INSERT INTO t`, `DELETE FROM t`,
/// and, in PL/pgSQL, `NEW.a := ...` and `SELECT ... INTO NEW.a, NEW.b`, which write
/// columns of the row the trigger fires on (`table`).
pub fn writes(table: &str, body: &[Token]) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    let word = |i: usize| match body.get(i) {
        Some(Token::Word(w) | Token::Quoted(w)) => Some(w.as_str()),
        _ => None,
    };
    let new_column = |i: usize| {
        (word(i) == Some("new") && body.get(i + 1).is_some_and(|t| t.is_sym(".")))
            .then(|| word(i + 2))
            .flatten()
    };
    let mut i = 0;
    while i < body.len() {
        let statement_start = i == 0
            || body[i - 1].is_sym(";")
            || ["begin", "then", "else", "loop"]
                .iter()
                .any(|w| body[i - 1].is_word(w));
        if body[i].is_word("update") {
            let mut j = i + 1;
            if word(j) == Some("or") {
                j += 2;
            }
            let mut target = word(j).ok_or("UPDATE without a table")?.to_owned();
            j += 1;
            while body.get(j).is_some_and(|t| t.is_sym(".")) {
                target = word(j + 1).ok_or("a dot without a name")?.to_owned();
                j += 2;
            }
            if word(j).is_some_and(|w| w != "set") {
                j += 1; // an alias
            }
            if word(j) != Some("set") {
                return Err(format!("UPDATE {target} without SET"));
            }
            j += 1;
            // `column = value` pairs, separated by commas outside parentheses.
            loop {
                let column = word(j).ok_or("SET without a column")?;
                out.insert(format!("{target}.{column}"));
                j += 1;
                let mut depth = 0i32;
                while let Some(t) = body.get(j) {
                    if t.is_sym("(") {
                        depth += 1;
                    } else if t.is_sym(")") {
                        depth -= 1;
                    } else if depth == 0
                        && (t.is_sym(",")
                            || t.is_sym(";")
                            || ["where", "from", "returning"].iter().any(|w| t.is_word(w)))
                    {
                        break;
                    }
                    j += 1;
                }
                if body.get(j).is_some_and(|t| t.is_sym(",")) {
                    j += 1;
                } else {
                    break;
                }
            }
            i = j;
        } else if body[i].is_word("insert") && word(i + 1) == Some("into") {
            out.insert(format!(
                "{} (insert)",
                word(i + 2).ok_or("INSERT INTO what")?
            ));
            i += 3;
        } else if body[i].is_word("delete") && word(i + 1) == Some("from") {
            out.insert(format!(
                "{} (delete)",
                word(i + 2).ok_or("DELETE FROM what")?
            ));
            i += 3;
        } else if body[i].is_word("into") && new_column(i + 1).is_some() {
            let mut j = i + 1;
            while let Some(column) = new_column(j) {
                out.insert(format!("{table}.{column}"));
                j += 3;
                if !body.get(j).is_some_and(|t| t.is_sym(",")) {
                    break;
                }
                j += 1;
            }
            i = j;
        } else if let (true, Some(column)) = (statement_start, new_column(i)) {
            // PL/pgSQL's assignment, `:=` or `=`, only ever starts a statement.
            if body
                .get(i + 3)
                .is_some_and(|t| t.is_sym(":=") || t.is_sym("="))
            {
                out.insert(format!("{table}.{column}"));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(sql: &str) -> String {
        expression(&tokens(sql).unwrap()).unwrap().to_string()
    }

    #[test]
    fn each_backends_spelling_of_one_check_reads_the_same() {
        for (sqlite, postgres) in [
            (
                "role IN ('rater', 'lead')",
                "(role = ANY (ARRAY['rater'::text, 'lead'::text]))",
            ),
            (
                "gold_rate >= 0 AND gold_rate <= 1",
                "((gold_rate >= (0)::double precision) AND (gold_rate <= (1)::double precision))",
            ),
            ("\"Overlap\"   >=1", "(\"Overlap\" >= 1)"),
            ("x BETWEEN 1 AND 2", "((x >= 1) AND (x <= 2))"),
            ("s NOT IN ('a')", "(s <> ALL (ARRAY['a'::text]))"),
            (
                "v IN ('YES', 'NO')",
                "((v)::text = ANY ((ARRAY['YES'::character varying, 'NO'::character varying])::text[]))",
            ),
            (
                "OLD.status = 'returned' OR NEW.status == 'returned'",
                "(((old.status = 'returned'::text) OR (new.status = 'returned'::text)))",
            ),
            ("a + b * c > 0", "((a + (b * c)) > 0)"),
            ("note IS NOT NULL", "(note IS NOT NULL)"),
        ] {
            assert_eq!(
                normalised(sqlite),
                normalised(postgres),
                "{sqlite} / {postgres}"
            );
        }
    }

    #[test]
    fn different_rules_read_differently() {
        for (one, other) in [
            ("role IN ('rater', 'lead')", "role IN ('rater', 'admin')"),
            ("a >= 1", "a > 1"),
            ("(a + b) * c > 0", "a + b * c > 0"),
            ("a = 1 OR b = 1 AND c = 1", "(a = 1 OR b = 1) AND c = 1"),
            ("s NOT IN ('a')", "s IN ('a')"),
            ("x = 'a'", "x = 'A'"),
        ] {
            assert_ne!(normalised(one), normalised(other), "{one} / {other}");
        }
    }

    #[test]
    fn what_it_cannot_read_is_an_error_not_a_guess() {
        for sql in [
            "CASE WHEN a THEN 1 END",
            "a = ANY (b)",
            "x::mytype",
            "a IS TRUE",
        ] {
            assert!(expression(&tokens(sql).unwrap()).is_err(), "{sql}");
        }
    }

    #[test]
    fn a_create_table_gives_its_column_and_table_checks() {
        let sql = "CREATE TABLE t (a INTEGER CHECK (a >= 0), -- a CHECK (in a comment)\n \
                   b TEXT DEFAULT 'CHECK (b)', CONSTRAINT both CHECK ((a) < length(b)))";
        let found: Vec<String> = checks(&tokens(sql).unwrap())
            .unwrap()
            .iter()
            .map(|t| expression(t).unwrap().to_string())
            .collect();
        assert_eq!(found, ["(a >= 0)", "(a < length(b))"]);
    }

    #[test]
    fn triggers_read_alike_from_both_backends() {
        let sqlite = trigger(
            "CREATE TRIGGER r AFTER UPDATE OF status ON ratings\n\
             WHEN OLD.status = 'returned' OR NEW.status = 'returned'\n\
             BEGIN UPDATE access_epoch SET version = version + 1; END",
        )
        .unwrap();
        let postgres = trigger(
            "CREATE CONSTRAINT TRIGGER r AFTER UPDATE OF status ON public.ratings DEFERRABLE \
             INITIALLY DEFERRED FOR EACH ROW WHEN (((old.status = 'returned'::text) OR \
             (new.status = 'returned'::text))) EXECUTE FUNCTION access_epoch_forward()",
        )
        .unwrap();
        assert_eq!(
            (&sqlite.table, &sqlite.timing, &sqlite.events, &sqlite.each),
            (
                &postgres.table,
                &postgres.timing,
                &postgres.events,
                &postgres.each
            )
        );
        assert_eq!(sqlite.when, postgres.when);
        assert!(postgres.deferred && !sqlite.deferred);
        let both = trigger(
            "CREATE TRIGGER t AFTER DELETE OR UPDATE ON public.users FOR EACH ROW EXECUTE \
             FUNCTION f()",
        )
        .unwrap();
        assert_eq!(both.events, ["DELETE", "UPDATE"]);
        assert_eq!(
            writes("ratings", &sqlite.body).unwrap(),
            BTreeSet::from(["access_epoch.version".to_owned()])
        );
    }

    #[test]
    fn what_a_trigger_writes_reads_alike_from_sql_and_plpgsql() {
        let sqlite = tokens(
            "UPDATE ratings SET a = (SELECT x FROM t WHERE t.id = NEW.id), b = EXISTS \
             (SELECT 1 FROM g WHERE g.id = NEW.id) WHERE id = NEW.id;",
        )
        .unwrap();
        let plpgsql = tokens(
            "BEGIN SELECT t.x INTO NEW.a FROM t WHERE t.id = NEW.id; NEW.b := EXISTS (SELECT \
             1 FROM g WHERE g.id = NEW.id); IF NEW.c = 1 THEN RETURN NEW; END IF; END",
        )
        .unwrap();
        let expected = BTreeSet::from(["ratings.a".to_owned(), "ratings.b".to_owned()]);
        assert_eq!(writes("ratings", &sqlite).unwrap(), expected);
        assert_eq!(writes("ratings", &plpgsql).unwrap(), expected);
    }
}
