"""Value, column and table encoders with one interface, shared by the Spark embed stage and queries.

* :class:`HashEncoder` (default, no training): normalised values -> hashed word and char n-grams -> d dims.
* :class:`JoinEncoder` (:func:`train_join_encoder`): contrastive value encoder for semantic joins (PEXESO).
* :class:`TableEncoder` (:func:`train_table_encoder`): TACTUS attentive table encoder over column vectors.
* :class:`SentenceTransformerEncoder`: optional local sentence-transformers model.

Every encoder has ``encode_values``, ``encode_column``, ``encode_table``, ``dim`` and a content-hash ``version``;
trained ones serialise with ``to_bytes`` and come back with :func:`load_encoder`.
"""
from .base import ColumnConfig, Encoder
from .hash_encoder import HashEncoder, HashEncoderConfig
from .join_encoder import JoinEncoder, JoinEncoderConfig
from .join_training import train_join_encoder
from .registry import encoder_from_bytes, load_encoder, save_encoder
from .sentence import SentenceTransformerEncoder
from .table_encoder import PreparedTable, TableEncoder, TableEncoderConfig, train_table_encoder

__all__ = [
    "ColumnConfig", "Encoder", "HashEncoder", "HashEncoderConfig", "JoinEncoder", "JoinEncoderConfig",
    "PreparedTable", "SentenceTransformerEncoder", "TableEncoder", "TableEncoderConfig", "encoder_from_bytes",
    "load_encoder", "save_encoder", "train_join_encoder", "train_table_encoder",
]
