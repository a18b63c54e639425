//! Task content to safe HTML: Markdown rendered with pulldown-cmark, code blocks
//! highlighted with syntect (CSS classes, no inline styles), and the result sanitised
//! with ammonia. Raw HTML in the Markdown is shown as text, never interpreted.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;
use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// Code longer than this is shown plain: highlighting is slow on huge inputs.
const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;
/// Every highlighting class starts with this, which is how the sanitiser knows them.
const CLASS_PREFIX: &str = "hl-";

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// Classes our own markup uses, allowed through the sanitiser beside `hl-*`.
const OWN_CLASSES: [&str; 6] = ["code", "line", "src", "message", "role", "conversation"];

static SANITISER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    builder
        .rm_tags(["img"])
        .add_tag_attributes("span", ["class"])
        .add_tag_attributes("div", ["class", "data-lang"])
        .add_tag_attributes("pre", ["class"])
        .add_tag_attributes("code", ["class"])
        .attribute_filter(|_, attribute, value| match attribute {
            "class" => {
                let kept: Vec<&str> = value
                    .split_whitespace()
                    .filter(|c| {
                        c.starts_with(CLASS_PREFIX)
                            || OWN_CLASSES.contains(c)
                            || c.starts_with("role-")
                    })
                    .collect();
                Some(Cow::Owned(kept.join(" ")))
            }
            _ => Some(Cow::Borrowed(value)),
        })
        .link_rel(Some("noopener noreferrer nofollow"));
    builder
});

/// Markdown to sanitised HTML.
pub fn markdown(text: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut events: Vec<Event> = Vec::new();
    let mut code: Option<(String, String)> = None;
    for event in Parser::new_ext(text, options) {
        match (event, &mut code) {
            (Event::Start(Tag::CodeBlock(kind)), _) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            (Event::Text(text), Some((_, source))) => source.push_str(&text),
            (Event::End(TagEnd::CodeBlock), Some(_)) => {
                let (lang, source) = code.take().unwrap_or_default();
                events.push(Event::Html(CowStr::from(code_block(&lang, &source))));
            }
            // Raw HTML is shown as the text it is.
            (Event::Html(html) | Event::InlineHtml(html), _) => events.push(Event::Text(html)),
            // Images would load from other sites (and the CSP refuses them): link instead.
            (
                Event::Start(Tag::Image {
                    link_type,
                    dest_url,
                    title,
                    id,
                }),
                _,
            ) => {
                events.push(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }));
            }
            (Event::End(TagEnd::Image), _) => events.push(Event::End(TagEnd::Link)),
            (event, _) => events.push(event),
        }
    }
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    sanitise(&html)
}

/// The most texts [`markdown_kept`] keeps; past it, it starts again from none.
const KEPT_MAX: usize = 512;

/// HTML of texts rendered by [`markdown_kept`], by the text.
static KEPT: LazyLock<Mutex<HashMap<Box<str>, Arc<str>>>> = LazyLock::new(Mutex::default);

/// [`markdown`] of a text that many pages show again and again (a rubric's guidelines
/// and definitions, on every form): rendered once per process and kept. Not for task
/// content, which is many texts each shown a few times, and is kept with its task.
pub fn markdown_kept(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let kept = |map: &HashMap<Box<str>, Arc<str>>| map.get(text).map(|html| html.to_string());
    if let Some(html) = kept(&KEPT.lock().unwrap_or_else(|e| e.into_inner())) {
        return html;
    }
    // Rendered outside the lock: two first views of one text may both render it.
    let html: Arc<str> = markdown(text).into();
    let mut map = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if map.len() >= KEPT_MAX {
        map.clear();
    }
    map.insert(text.into(), Arc::clone(&html));
    html.to_string()
}

/// HTML through the sanitiser [`markdown`] uses: only its allowed tags, attributes,
/// classes and URL schemes are kept. Sanitising its own output again changes nothing
/// (the fuzz target `render_markdown` checks that).
pub fn sanitise(html: &str) -> String {
    SANITISER.clean(html).to_string()
}

/// A prompt (a string, or a conversation of `{role, content}` messages) to HTML.
pub fn prompt(prompt: &Value) -> String {
    match prompt {
        Value::Array(messages) => {
            let mut html = String::from("<div class=\"conversation\">");
            for message in messages {
                let role = message
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("user");
                let role = match role {
                    "system" | "assistant" => role,
                    _ => "user",
                };
                let content = message.get("content").and_then(Value::as_str).unwrap_or("");
                html.push_str(&format!(
                    "<div class=\"message role-{role}\"><div class=\"role\">{role}</div>{}</div>",
                    markdown(content)
                ));
            }
            html.push_str("</div>");
            html
        }
        Value::String(text) => markdown(text),
        other => markdown(&other.to_string()),
    }
}

/// A code block: the (highlighted) source, one `span.line` per line. The page numbers the
/// lines with a CSS counter, so the numbers stay beside their lines when long lines wrap,
/// and are never part of the text a rater copies or runs.
fn code_block(lang: &str, source: &str) -> String {
    let source = source.strip_suffix('\n').unwrap_or(source);
    let body = highlight(lang, source).unwrap_or_else(|| escape(source));
    let lang_attr = escape(lang);
    format!(
        "<div class=\"code\" data-lang=\"{lang_attr}\"><pre class=\"src\"><code>{}</code></pre></div>",
        split_lines(&body)
    )
}

/// Highlighted HTML (only `<span class=..>`, `</span>` and escaped text) cut into one
/// `<span class="line">` per line. A highlighting span open across a line break (a
/// comment or string of several lines) is closed at the end of the line and opened again
/// on the next, so each line's markup stands alone. The line break stays in the text,
/// after the line's own spans, so the block's text is the source as it was.
fn split_lines(html: &str) -> String {
    const LINE: &str = "<span class=\"line\">";
    let mut out = String::with_capacity(html.len() + html.len() / 4 + LINE.len());
    let mut open: Vec<&str> = Vec::new();
    out.push_str(LINE);
    let mut rest = html;
    while !rest.is_empty() {
        if rest.starts_with("</span>") {
            open.pop();
            out.push_str("</span>");
            rest = &rest["</span>".len()..];
        } else if rest.starts_with("<span") {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            open.push(&rest[..end]);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else if let Some(after) = rest.strip_prefix('\n') {
            for _ in &open {
                out.push_str("</span>");
            }
            out.push_str("\n</span>");
            out.push_str(LINE);
            for tag in &open {
                out.push_str(tag);
            }
            rest = after;
        } else {
            let end = rest.find(['<', '\n']).unwrap_or(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        }
    }
    out.push_str("</span>");
    out
}

fn highlight(lang: &str, source: &str) -> Option<String> {
    if lang.is_empty() || source.len() > MAX_HIGHLIGHT_BYTES {
        return None;
    }
    let syntax = SYNTAXES.find_syntax_by_token(lang)?;
    let style = ClassStyle::SpacedPrefixed {
        prefix: CLASS_PREFIX,
    };
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, &SYNTAXES, style);
    for line in LinesWithEndings::from(source) {
        generator
            .parse_html_for_line_which_includes_newline(line)
            .ok()?;
    }
    Some(generator.finalize())
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn markdown_renders_emphasis_lists_and_tables() {
        let html =
            markdown("Some *emphasis*.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(html.contains("<em>emphasis</em>"));
        assert!(html.contains("<li>one</li>"));
        assert!(html.contains("<td>2</td>"));
    }

    #[test]
    fn kept_markdown_is_the_same_html_and_is_kept() {
        let text = "A *kept* guideline, number 417:\n\n```python\nprint(1)\n```\n";
        let first = markdown_kept(text);
        assert_eq!(first, markdown(text));
        let held = KEPT.lock().unwrap().get(text).map(|html| html.to_string());
        assert_eq!(held.as_deref(), Some(first.as_str()));
        assert_eq!(markdown_kept(text), first);
        assert_eq!(markdown_kept(""), "");
    }

    #[test]
    fn code_is_highlighted_with_classes_and_numbered() {
        let html = markdown("```rust\nfn main() {\n    let x = 1;\n}\n```\n");
        assert!(html.contains("class=\"code\""), "{html}");
        assert_eq!(html.matches("<span class=\"line\">").count(), 3, "{html}");
        assert!(
            html.contains("hl-keyword") || html.contains("hl-storage"),
            "{html}"
        );
        assert!(
            !html.contains("style="),
            "no inline styles (the CSP refuses them)"
        );
    }

    #[test]
    fn each_line_stands_alone_and_the_text_is_the_source() {
        let source = "/* a comment\n   of three\n   lines */\nlet s = \"<b>\";\n\nx";
        let html = markdown(&format!("```js\n{source}\n```\n"));
        let code = &html[html.find("<code>").unwrap() + 6..html.find("</code>").unwrap()];
        let lines: Vec<&str> = code.split("<span class=\"line\">").skip(1).collect();
        assert_eq!(lines.len(), 6, "{html}");
        for line in &lines {
            // Each line closes what it opens, its own span included.
            assert_eq!(
                line.matches("<span").count() + 1,
                line.matches("</span>").count(),
                "{line}"
            );
        }
        assert!(
            lines[1].contains("hl-comment"),
            "the comment's second line is still one: {html}"
        );
        let text = tags_removed(code)
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        assert_eq!(text, source);
    }

    /// `html` with its tags left out (entities kept).
    fn tags_removed(html: &str) -> String {
        let mut text = String::new();
        let mut inside = false;
        for c in html.chars() {
            match c {
                '<' => inside = true,
                '>' => inside = false,
                c if !inside => text.push(c),
                _ => {}
            }
        }
        text
    }

    #[test]
    fn unknown_languages_and_indented_code_are_shown_plain_and_escaped() {
        let html = markdown("```klingon\n<b>qapla'</b>\n```\n\n    <i>x</i>\n");
        assert!(html.contains("&lt;b&gt;qapla"), "{html}");
        assert!(html.contains("&lt;i&gt;x&lt;/i&gt;"), "{html}");
        assert!(!html.contains("<b>") && !html.contains("<i>"));
    }

    #[test]
    fn html_inside_code_stays_text() {
        let html = markdown("```js\nel.innerHTML = '<img src=x onerror=alert(1)>';\n```\n");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img"), "{html}");
    }

    #[test]
    fn hostile_markup_never_survives() {
        let hostile = [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "[click](javascript:alert(1))",
            "[click](JaVaScRiPt:alert(1))",
            "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<svg onload=alert(1)>",
            "<iframe src=\"https://evil.example\"></iframe>",
            "<style>body{display:none}</style>",
            "![x](https://evil.example/track.png)",
            "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
            "<base href=\"https://evil.example/\">",
            "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">",
        ];
        for input in hostile {
            let html = markdown(input);
            for tag in tags(&html) {
                let name = tag
                    .split(|c: char| c.is_whitespace() || c == '>' || c == '/')
                    .next()
                    .unwrap_or("");
                assert!(
                    ALLOWED_IN_OUTPUT.contains(&name),
                    "{input:?} produced <{tag}"
                );
                let lower = tag.to_lowercase();
                assert!(
                    !lower.split_whitespace().any(|a| a.starts_with("on")),
                    "{input:?}: handler in <{tag}"
                );
                assert!(
                    !lower.contains("javascript:") && !lower.contains("data:"),
                    "{input:?}: <{tag}"
                );
            }
        }
    }

    /// The tags actually present in `html` (text after each `<` that opens a tag).
    fn tags(html: &str) -> Vec<String> {
        html.split('<')
            .skip(1)
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()))
            .map(|rest| rest[..rest.find('>').unwrap_or(rest.len())].to_owned())
            .collect()
    }

    const ALLOWED_IN_OUTPUT: [&str; 8] = ["p", "a", "em", "strong", "code", "pre", "div", "span"];

    #[test]
    fn links_are_kept_but_cannot_reach_back() {
        let html = markdown("[docs](https://docs.rs/axum)");
        assert!(html.contains("href=\"https://docs.rs/axum\""));
        assert!(html.contains("rel=\"noopener noreferrer nofollow\""));
    }

    #[test]
    fn images_become_links() {
        let html = markdown("![a diagram](https://example.com/d.png)");
        assert!(
            html.contains("<a href=\"https://example.com/d.png\""),
            "{html}"
        );
        assert!(html.contains("a diagram"));
    }

    #[test]
    fn sanitising_twice_changes_nothing() {
        let html = markdown("# Title\n\n```python\nprint('<hi>')\n```\n\n[x](https://a.example)");
        assert_eq!(sanitise(&html), html);
    }

    #[test]
    fn conversations_render_each_message_with_its_role() {
        let html = prompt(
            &json!([{"role": "user", "content": "Fix *this*"}, {"role": "assistant", "content": "Done"}, {"role": "evil\" onclick=\"x", "content": "y"}]),
        );
        assert!(html.contains("<div class=\"message role-user\"><div class=\"role\">user</div><p>Fix <em>this</em></p>"), "{html}");
        assert!(html.contains("role-assistant"));
        assert!(
            !html.contains("onclick"),
            "an unknown role is shown as user"
        );
    }
}
