//! Presentation of a modelled run: the SVG timeline and tile grid ([`svg`]), the Chrome
//! trace ([`trace`]) and the timeline analyses both draw on ([`timeline`]).

pub(crate) mod svg;
pub(crate) mod timeline;
pub(crate) mod trace;
