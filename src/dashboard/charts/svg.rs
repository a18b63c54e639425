//! A small typed SVG builder for the charts. Shapes hold numbers and palette colours
//! in typed fields, and one askama template (`templates/dashboard/chart.svg`) writes
//! them: attribute names are the template's, and every value, label and title goes
//! through askama's HTML escaping, so no markup is assembled by hand. Sizes and
//! colours are attributes, as the CSP allows no inline styles.

use std::fmt;

use askama::Template;

/// A colour of the charts' palette. Its field is private, so only the constants below
/// exist: no value from the data can become a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colour(&'static str);

impl Colour {
    /// Response A, the judge, a dot.
    pub const BLUE: Self = Self("#2357c6");
    /// Ratings per answer, where no response is favoured.
    pub const LIGHT_BLUE: Self = Self("#5b8def");
    /// A 95% interval.
    pub const PALE_BLUE: Self = Self("#9bb4e8");
    /// Response B.
    pub const ORANGE: Self = Self("#e8a15a");
    /// Alpha, and the batch's own (pooled) row.
    pub const RED: Self = Self("#c9563c");
    /// A tie, the raters beside a judge, no lean.
    pub const GREY: Self = Self("#7f8c8d");
    /// Words of the legend.
    pub const TEXT: Self = Self("#1d2733");
    /// Words that say a figure is missing, and a reference line.
    pub const MUTED: Self = Self("#5d6675");
    /// The track behind a scale.
    pub const TRACK: Self = Self("#dfe3e8");
    /// The grid lines of an axis.
    pub const GRID: Self = Self("#eef0f3");
    /// Ink on a light fill.
    pub const BLACK: Self = Self("#000");
    /// Ink on a dark fill.
    pub const WHITE: Self = Self("#fff");

    /// One colour per option in the answers chart, assigned in order of first
    /// appearance so that an option keeps its colour on every row.
    pub const OPTIONS: [Self; 12] = [
        Self("#1f77b4"),
        Self("#ff7f0e"),
        Self("#2ca02c"),
        Self("#d62728"),
        Self("#9467bd"),
        Self("#8c564b"),
        Self("#e377c2"),
        Self("#7f7f7f"),
        Self("#bcbd22"),
        Self("#17becf"),
        Self("#393b79"),
        Self("#ad494a"),
    ];

    /// Ordered options, first to last: one blue from dark to light, so the order shows
    /// in the colour itself (options past the sixth keep the lightest).
    pub const RAMP: [Self; 6] = [
        Self("#08306b"),
        Self("#08519c"),
        Self("#3182bd"),
        Self("#6baed6"),
        Self("#9ecae1"),
        Self("#c6dbef"),
    ];

    /// Answers outside an ordered scale (N/A, cannot assess): greys.
    pub const UNSCALED: [Self; 2] = [Self("#969696"), Self("#d9d9d9")];

    /// The colour as `#rgb` or `#rrggbb`.
    pub fn hex(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A length or a coordinate, written with one decimal as the charts always have been.
#[derive(Debug, Clone, Copy)]
pub struct Px(f64);

impl fmt::Display for Px {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1}", self.0)
    }
}

/// A filled rectangle, with a tooltip when it has a title.
pub struct Rect {
    x: Px,
    y: Px,
    width: Px,
    height: Px,
    fill: Colour,
    title: Option<String>,
}

impl Rect {
    pub fn new(x: f64, y: f64, width: f64, height: f64, fill: Colour) -> Self {
        Self {
            x: Px(x),
            y: Px(y),
            width: Px(width),
            height: Px(height),
            fill,
            title: None,
        }
    }

    pub fn title(self, title: impl Into<String>) -> Self {
        Self {
            title: Some(title.into()),
            ..self
        }
    }
}

/// A filled circle, with a tooltip when it has a title.
pub struct Circle {
    cx: Px,
    cy: Px,
    r: Px,
    fill: Colour,
    title: Option<String>,
}

impl Circle {
    pub fn new(cx: f64, cy: f64, r: f64, fill: Colour) -> Self {
        Self {
            cx: Px(cx),
            cy: Px(cy),
            r: Px(r),
            fill,
            title: None,
        }
    }

    pub fn title(self, title: impl Into<String>) -> Self {
        Self {
            title: Some(title.into()),
            ..self
        }
    }
}

/// Where a text sits against its `x`; the start (SVG's default) is not written.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    Middle,
    End,
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Middle => "middle",
            Self::End => "end",
        })
    }
}

/// Words at (`x`, `y`), their baseline, in `size` points.
pub struct Text {
    x: Px,
    y: Px,
    size: u8,
    anchor: Option<Anchor>,
    fill: Option<Colour>,
    words: String,
}

impl Text {
    pub fn new(x: f64, y: f64, size: u8, words: impl Into<String>) -> Self {
        Self {
            x: Px(x),
            y: Px(y),
            size,
            anchor: None,
            fill: None,
            words: words.into(),
        }
    }

    pub fn anchor(self, anchor: Anchor) -> Self {
        Self {
            anchor: Some(anchor),
            ..self
        }
    }

    pub fn fill(self, fill: Colour) -> Self {
        Self {
            fill: Some(fill),
            ..self
        }
    }
}

/// One drawn thing.
pub enum Shape {
    Rect(Rect),
    Circle(Circle),
    Text(Text),
}

impl From<Rect> for Shape {
    fn from(rect: Rect) -> Self {
        Self::Rect(rect)
    }
}

impl From<Circle> for Shape {
    fn from(circle: Circle) -> Self {
        Self::Circle(circle)
    }
}

impl From<Text> for Shape {
    fn from(text: Text) -> Self {
        Self::Text(text)
    }
}

/// A child of the `<svg>`: a shape, or shapes grouped under a class (a legend entry).
enum Item {
    Shape(Shape),
    Group {
        class: &'static str,
        shapes: Vec<Shape>,
    },
}

/// A chart being drawn: its name for screen readers and what it holds, in painting
/// order. Its size is known once everything is placed, so [`Svg::finish`] takes it.
#[derive(Template)]
#[template(path = "dashboard/chart.svg")]
pub struct Svg {
    label: String,
    width: Px,
    height: Px,
    items: Vec<Item>,
}

impl Svg {
    /// An empty chart named `label` (its `aria-label`).
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            width: Px(0.0),
            height: Px(0.0),
            items: Vec::new(),
        }
    }

    pub fn push(&mut self, shape: impl Into<Shape>) {
        self.items.push(Item::Shape(shape.into()));
    }

    pub fn group(&mut self, class: &'static str, shapes: Vec<Shape>) {
        self.items.push(Item::Group { class, shapes });
    }

    /// The chart's markup, `width` by `height` user units.
    pub fn finish(mut self, width: f64, height: f64) -> String {
        (self.width, self.height) = (Px(width), Px(height));
        self.render()
            .expect("a chart holds only numbers, palette colours and text: writing it cannot fail")
    }
}
