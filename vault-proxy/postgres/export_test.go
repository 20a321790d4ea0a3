package postgres

// AuditEventsPage is the query behind DB.AuditEvents, for tests of its plan.
const AuditEventsPage = auditEventsPage

// AppendCopyRows is appendCopyRows, for the shipping benchmark.
var AppendCopyRows = appendCopyRows
