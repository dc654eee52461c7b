//! Files the run owns.
use super::*;
