//! What the renderer's output must never hold, checked on the DOM a browser would build
//! from it (html5ever is the parser ammonia itself uses) and on the raw text.

use html5ever::tendril::TendrilSink;
use html5ever::{ParseOpts, QualName, local_name, ns, parse_fragment};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

use crate::render;

/// Elements that run script, load other documents, restyle the page, change where its
/// links or forms go, or switch the parser into SVG/MathML (where sanitiser bypasses live).
pub const FORBIDDEN_ELEMENTS: [&str; 19] = [
    "script", "iframe", "object", "embed", "style", "base", "meta", "form", "svg", "math",
    // Not named in the brief, but just as unwelcome in rendered task content.
    "frame", "frameset", "link", "template", "noscript", "img", "input", "button", "textarea",
];

/// Attributes a browser follows as a URL.
const URL_ATTRIBUTES: [&str; 4] = ["href", "src", "action", "formaction"];

/// URL schemes that run script or smuggle in a document.
const FORBIDDEN_SCHEMES: [&str; 3] = ["javascript:", "vbscript:", "data:"];

/// Panics (naming the input) if `html`, rendered from `input`, breaks any rule.
pub fn check_output(input: &dyn std::fmt::Debug, html: &str) {
    // Raw text: the serialiser escapes `<` in text and in attribute values (html5ever
    // >= 0.39), and comments are stripped, so `<name` can only open a real tag.
    let lower = html.to_ascii_lowercase();
    for name in FORBIDDEN_ELEMENTS {
        assert!(
            !lower.contains(&format!("<{name}")),
            "<{name} in the output of {input:?}: {html}"
        );
    }

    // The DOM: parsed as the pages insert it, inside a <div>.
    let dom = parse_fragment(
        RcDom::default(),
        ParseOpts::default(),
        QualName::new(None, ns!(html), local_name!("div")),
        Vec::new(),
        false,
    )
    .one(html);
    let mut elements = 0;
    walk(&dom.document, &mut |name, attrs| {
        elements += 1;
        check_element(input, html, name, attrs);
    });
    assert!(
        elements >= 1,
        "no <html> root parsing the output of {input:?}"
    );

    // The sanitiser leaves its own output alone.
    let again = render::sanitise(html);
    assert_eq!(
        again, html,
        "sanitising twice changed the output of {input:?}"
    );
}

fn check_element(
    input: &dyn std::fmt::Debug,
    html: &str,
    name: &QualName,
    attrs: &[html5ever::Attribute],
) {
    let local = name.local.to_ascii_lowercase();
    assert!(
        name.ns == ns!(html),
        "<{local}> in namespace {:?} from {input:?}: {html}",
        name.ns
    );
    assert!(
        !FORBIDDEN_ELEMENTS.contains(&local.as_str()),
        "<{local}> element from {input:?}: {html}"
    );
    for attr in attrs {
        let attr_name = attr.name.local.to_ascii_lowercase();
        assert!(
            !attr_name.starts_with("on"),
            "<{local} {attr_name}=…> event handler from {input:?}: {html}"
        );
        if URL_ATTRIBUTES.contains(&attr_name.as_str()) {
            // The parser has decoded entities; browsers also ignore whitespace and
            // control characters around (and tabs/newlines inside) a scheme.
            let url: String = attr
                .value
                .chars()
                .filter(|c| !c.is_whitespace() && !c.is_control())
                .collect::<String>()
                .to_lowercase();
            assert!(
                !FORBIDDEN_SCHEMES.iter().any(|s| url.starts_with(s)),
                "<{local} {attr_name}={:?}> from {input:?}: {html}",
                &*attr.value
            );
        }
    }
}

/// Calls `visit` with every element under `node` (the `<html>` root of a fragment
/// included), template contents too.
fn walk(node: &Handle, visit: &mut dyn FnMut(&QualName, &[html5ever::Attribute])) {
    if let NodeData::Element {
        name,
        attrs,
        template_contents,
        ..
    } = &node.data
    {
        visit(name, &attrs.borrow());
        if let Some(contents) = template_contents.borrow().as_ref() {
            walk(contents, visit);
        }
    }
    for child in node.children.borrow().iter() {
        walk(child, visit);
    }
}
