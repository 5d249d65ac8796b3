//! The consumed values of a generated struct, as typed callbacks: each generated object has a
//! `visit_fields` (and each [`Entry`](super::Entry) a `visit`) that hands a [`FieldVisitor`]
//! every field by its JSON key, nested objects and arrays opened and closed around their
//! contents. A reader that wants the values (the command's `neff diff`) gets them typed, from
//! the same schema line that made the field, instead of reading `Debug` text back.
//!
//! Nothing here allocates; the visitor is generic, so a build that never visits links none of
//! it.

use crate::json::Float;

use super::rt::{ArrayLen, Each, EachMap, EachOrName, Present, StrOrOther};
use super::JsonType;

/// One consumed value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue<'a> {
    /// An unsigned integer (`u8` to `u64` in `schema/`).
    Unsigned(u64),
    /// A signed integer.
    Signed(i64),
    /// A bool.
    Bool(bool),
    /// A number, as its checked text (`f64` in `schema/`).
    Number(&'a Float),
    /// A string (a `string<..>`, or the member name of an `each_or_name<..>`).
    Str(&'a str),
    /// A `string_or_other<..>` key whose value is not a string: its JSON type.
    Other(JsonType),
    /// A `count` key: the array's elements were validated and counted, not kept.
    Count(u64),
    /// A `present` key: only that it is there, and whether it is `false`.
    Present {
        /// The value is the literal `false`.
        is_false: bool,
    },
    /// A streamed key (`each<..>`, `each_map<..>`): its `count` elements were handed to the
    /// reader's visitor before this, as entries of this key (children before their parent).
    Streamed {
        /// Elements read.
        count: u64,
        /// An object keyed by name (`each_map<..>`), not an array.
        map: bool,
    },
}

/// Receives the consumed values of a generated struct, in schema order. A key is `None` for an
/// element of an array (or a streamed element itself, [`Entry::visit`](super::Entry::visit)).
/// An absent optional key is not visited.
pub trait FieldVisitor {
    /// A value of `key`.
    fn value(&mut self, key: Option<&'static str>, value: FieldValue<'_>);
    /// An object (`array` false) or an array (`array` true) of `key` opens: its fields (or its
    /// elements, with key `None`) follow, then [`FieldVisitor::close`].
    fn open(&mut self, key: Option<&'static str>, array: bool);
    /// The innermost open object or array closes.
    fn close(&mut self);
    /// The name an entry of an object keyed by name has in its parent (`var.<name>`), right
    /// after its [`FieldVisitor::open`].
    fn name(&mut self, name: &str);
}

/// A field's type, visited as `key`: implemented for every type a generated field has.
pub trait VisitValue {
    /// Hands `self` to `v` as the value of `key`.
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V);
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl VisitValue for $t {
            fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
                v.value(key, FieldValue::Unsigned(u64::from(*self)));
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64);

impl VisitValue for i64 {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Signed(*self));
    }
}

impl VisitValue for bool {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Bool(*self));
    }
}

impl VisitValue for Float {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Number(self));
    }
}

impl<const N: usize> VisitValue for heapless::String<N> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Str(self.as_str()));
    }
}

impl<T: VisitValue, const N: usize> VisitValue for heapless::Vec<T, N> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.open(key, true);
        for item in self {
            item.visit_value(None, v);
        }
        v.close();
    }
}

impl<T: VisitValue> VisitValue for Option<T> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        if let Some(value) = self {
            value.visit_value(key, v);
        }
    }
}

impl VisitValue for ArrayLen {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Count(self.0));
    }
}

impl VisitValue for Present {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Present { is_false: self.is_false });
    }
}

impl<const N: usize> VisitValue for StrOrOther<N> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        match (&self.text, self.other) {
            (Some(text), _) => v.value(key, FieldValue::Str(text.as_str())),
            (None, Some(other)) => v.value(key, FieldValue::Other(other)),
            (None, None) => {}
        }
    }
}

impl<T, K> VisitValue for Each<T, K> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Streamed { count: self.count, map: false });
    }
}

impl<T, K> VisitValue for EachMap<T, K> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        v.value(key, FieldValue::Streamed { count: self.count, map: true });
    }
}

impl<T, K, const N: usize> VisitValue for EachOrName<T, K, N> {
    fn visit_value<V: FieldVisitor + ?Sized>(&self, key: Option<&'static str>, v: &mut V) {
        match &self.name {
            Some(name) => v.value(key, FieldValue::Str(name.as_str())),
            None => v.value(key, FieldValue::Streamed { count: self.count, map: false }),
        }
    }
}
