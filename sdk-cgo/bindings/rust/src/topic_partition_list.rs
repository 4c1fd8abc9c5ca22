//! Offsets and partition lists, for `assign`.
use crate::error::{ErrorCode, KafkaError, KafkaResult};
use crate::sys;

/// A position in a partition, as rdkafka's `Offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offset {
    Beginning,
    End,
    Offset(i64),
}

impl Offset {
    pub(crate) fn to_raw(self) -> i64 {
        match self {
            Offset::Beginning => sys::SPOOL_OFFSET_BEGINNING,
            Offset::End => sys::SPOOL_OFFSET_END,
            Offset::Offset(o) => o,
        }
    }
}

/// One element of a `TopicPartitionList`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicPartitionListElem {
    pub topic: String,
    pub partition: i32,
    pub offset: Offset,
}

/// Topic partitions with a starting offset each, for `BaseConsumer::assign`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicPartitionList {
    elements: Vec<TopicPartitionListElem>,
}

impl TopicPartitionList {
    pub fn new() -> TopicPartitionList {
        TopicPartitionList::default()
    }

    /// Adds topic[partition] starting at offset; a negative partition is `BAD_ARG`.
    pub fn add_partition_offset(&mut self, topic: &str, partition: i32, offset: Offset) -> KafkaResult<()> {
        if partition < 0 {
            return Err(KafkaError::Seek(ErrorCode::BAD_ARG));
        }
        self.elements.push(TopicPartitionListElem { topic: topic.to_string(), partition, offset });
        Ok(())
    }

    /// Adds topic[partition] from the beginning (libspool has no stored offsets without a
    /// group).
    pub fn add_partition(&mut self, topic: &str, partition: i32) {
        self.elements.push(TopicPartitionListElem { topic: topic.to_string(), partition, offset: Offset::Beginning });
    }

    pub fn elements(&self) -> &[TopicPartitionListElem] {
        &self.elements
    }

    pub fn count(&self) -> usize {
        self.elements.len()
    }
}
